{{/* Names and labels, as NVIDIA's nvidia-device-plugin chart makes them. */}}
{{- define "gdp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gdp.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gdp.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "gdp.templateLabels" -}}
app.kubernetes.io/name: {{ include "gdp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- with .Values.selectorLabelsOverride }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "gdp.selectorLabels" -}}
{{- if .Values.selectorLabelsOverride -}}
{{ toYaml .Values.selectorLabelsOverride }}
{{- else -}}
{{ include "gdp.templateLabels" . }}
{{- end -}}
{{- end -}}

{{- define "gdp.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "gdp.templateLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "gdp.image" -}}
{{- .Values.image.repository -}}:{{- .Values.image.tag | default .Chart.AppVersion -}}
{{- end -}}

{{/*
The config file the plugin reads, as JSON: {"source": "none"|"map"|"name",
"configMap": name, "key": key in it, "text": the config (map only)}.
config.default, else config.fallbackStrategies in order (named: the entry
"default"; single: the only entry; empty: none), as NVIDIA's config-manager
picks at a node's start; validation.yaml fails when nothing is picked.
*/}}
{{- define "gdp.config" -}}
{{- $c := .Values.config -}}
{{- $out := dict "source" "none" -}}
{{- if and $c.name $c.map -}}
{{- fail "config.name and config.map: set only one (config.name: an existing ConfigMap; config.map: configs made by this chart)" -}}
{{- end -}}
{{- $key := $c.default -}}
{{- if not $key -}}
{{- range $c.fallbackStrategies -}}
{{- if not $key -}}
{{- if and (eq . "named") (or $c.name (hasKey $c.map "default")) -}}
{{- $key = "default" -}}
{{- else if and (eq . "single") (eq (len (keys $c.map)) 1) -}}
{{- $key = first (keys $c.map) -}}
{{- else if eq . "empty" -}}
{{- $key = "-" -}}
{{- else if not (has . (list "named" "single" "empty")) -}}
{{- fail (printf "config.fallbackStrategies: %q is not one of named, single, empty" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $c.map -}}
{{- if not $key -}}
{{- fail (printf "config.map: no config selected: set config.default to one of %s, or config.fallbackStrategies (now %s; named takes the entry \"default\", single the only entry, empty none)" (keys $c.map | sortAlpha | join ", ") (join ", " $c.fallbackStrategies)) -}}
{{- else if ne $key "-" -}}
{{- if not (hasKey $c.map $key) -}}
{{- fail (printf "config.default: %q is not in config.map (%s)" $key (keys $c.map | sortAlpha | join ", ")) -}}
{{- end -}}
{{- $_ := set $out "source" "map" -}}
{{- $_ := set $out "configMap" (printf "%s-config" (include "gdp.fullname" .)) -}}
{{- $_ := set $out "key" "config.yaml" -}}
{{- $_ := set $out "text" (index $c.map $key) -}}
{{- end -}}
{{- else if $c.name -}}
{{- if not $key -}}
{{- fail (printf "config.name: no config selected in ConfigMap %s: set config.default to its key (or keep \"named\" in config.fallbackStrategies for the key \"default\")" $c.name) -}}
{{- else if ne $key "-" -}}
{{- $_ := set $out "source" "name" -}}
{{- $_ := set $out "configMap" $c.name -}}
{{- $_ := set $out "key" $key -}}
{{- end -}}
{{- end -}}
{{- mustToJson $out -}}
{{- end -}}

{{/* "true" when migStrategy or the selected config asks for MIG, or may
(an external ConfigMap without migStrategy, as NVIDIA's chart assumes). */}}
{{- define "gdp.usesMig" -}}
{{- $cfg := include "gdp.config" . | fromJson -}}
{{- $mig := .Values.migStrategy | default "" -}}
{{- if and (not $mig) (eq $cfg.source "map") -}}
{{- $mig = ((fromYaml $cfg.text).flags | default dict).migStrategy | default "" -}}
{{- else if and (not $mig) (eq $cfg.source "name") -}}
{{- $mig = "unknown" -}}
{{- end -}}
{{- if and $mig (ne $mig "none") }}true{{ end -}}
{{- end -}}

{{/* "true" when the selected config shares GPUs through MPS, or may
(an external ConfigMap). */}}
{{- define "gdp.usesMps" -}}
{{- $cfg := include "gdp.config" . | fromJson -}}
{{- if eq $cfg.source "name" }}true
{{- else if eq $cfg.source "map" -}}
{{- if ((fromYaml $cfg.text).sharing | default dict).mps }}true{{ end -}}
{{- end -}}
{{- end -}}

{{/* The container's securityContext. */}}
{{- define "gdp.securityContext" -}}
{{- if .Values.securityContext -}}
{{ toYaml .Values.securityContext }}
{{- else if .Values.compatWithCPUManager -}}
privileged: true
readOnlyRootFilesystem: true
{{- else -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
seccompProfile:
  type: RuntimeDefault
capabilities:
  drop: ["ALL"]
{{- if include "gdp.usesMig" . }}
  add: ["SYS_ADMIN"]
{{- end }}
{{- end -}}
{{- end -}}
