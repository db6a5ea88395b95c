{{/*
Names. The DaemonSet has the device plugin chart's name (gpu-device-plugin
for a release named gpu-device-plugin or gpu-device-plugin-dra), so that
Helm refuses to install both charts on one cluster: one node, one writer
of its GPUs. The ServiceAccount, RBAC and policy add "-dra".
*/}}
{{- define "dra.name" -}}
{{- default "gpu-device-plugin" .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dra.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 59 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "dra.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trimSuffix "-dra" | trunc 59 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 59 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "dra.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "dra.serviceAccountName" -}}
{{- default (printf "%s-dra" (include "dra.fullname" .)) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "dra.templateLabels" -}}
app.kubernetes.io/name: {{ include "dra.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- with .Values.selectorLabelsOverride }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "dra.selectorLabels" -}}
{{- if .Values.selectorLabelsOverride -}}
{{ toYaml .Values.selectorLabelsOverride }}
{{- else -}}
{{ include "dra.templateLabels" . }}
{{- end -}}
{{- end -}}

{{- define "dra.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "dra.templateLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "dra.image" -}}
{{- .Values.image.repository -}}:{{- .Values.image.tag | default .Chart.AppVersion -}}
{{- end -}}

{{/* The port of kubeletPlugin.metrics.gpuHttpEndpoint ([host]:port). */}}
{{- define "dra.port" -}}
{{- $parts := splitList ":" .Values.kubeletPlugin.metrics.gpuHttpEndpoint -}}
{{- last $parts -}}
{{- end -}}

{{/* featureGates as --feature-gates takes them: Name=true,Other=false. */}}
{{- define "dra.featureGates" -}}
{{- $gates := list -}}
{{- range $k := keys .Values.featureGates | sortAlpha -}}
{{- $gates = append $gates (printf "%s=%t" $k (index $.Values.featureGates $k)) -}}
{{- end -}}
{{- join "," $gates -}}
{{- end -}}

{{/* The config file with both.enabled (ours: flags.deviceAPI, dra.devices). */}}
{{- define "dra.bothConfig" -}}
{{- dict "version" "v1" "flags" (dict "deviceAPI" "both") "dra" (dict "devices" .Values.both.devices) | toYaml -}}
{{- end -}}
