// The subset of NVIDIA's NVML C API this project uses, declared from NVIDIA's
// NVML API reference. We never include or ship NVIDIA's nvml.h: the client
// (nvml.cc) resolves these symbols with dlsym, and the fake library
// (fake_nvml/) defines them. Values and layouts must match the real ABI.
#ifndef GDP_NVML_NVML_API_H_
#define GDP_NVML_NVML_API_H_

extern "C" {

typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

// Opaque handles. A MIG device handle is an nvmlDevice_t too.
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;
typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st* nvmlComputeInstance_t;

// Buffer sizes, including the terminating NUL.
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_DEVICE_UUID_BUFFER_SIZE 80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_BUFFER_SIZE 64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_NVLINK_MAX_LINKS 18

// nvmlInitWithFlags flags.
#define NVML_INIT_FLAG_NO_GPUS 1
#define NVML_INIT_FLAG_NO_ATTACH 2

// PCI bus id formats: busId uses an 8-digit domain, busIdLegacy a 4-digit one.
#define NVML_DEVICE_PCI_BUS_ID_FMT "%08X:%02X:%02X.0"
#define NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT "%04X:%02X:%02X.0"

typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // device id << 16 | vendor id
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
  unsigned int version;  // must be nvmlMemory_v2
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2U << 24U)))

typedef enum nvmlEnableState_enum {
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1

// GPU instance profiles: the `profile` argument of
// nvmlDeviceGetGpuInstanceProfileInfo (not the profile ID it reports).
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7  // with media engines (+me)
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8  // with media engines (+me)
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9  // twice the memory
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX 0xA
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX 0xB
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX 0xC
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME 0xD
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME 0xE
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME 0xF
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME 0x10
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX 0x11
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0x12

// Compute instance profiles, for nvmlGpuInstanceGetComputeInstanceProfileInfo.
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL 0x8
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT 0x9

#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT 0x1

// What a MIG device handle is made of (nvmlDeviceGetAttributes_v2).
typedef struct nvmlDeviceAttributes_st {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;  // MiB
} nvmlDeviceAttributes_t;

// Where a GPU instance sits: its memory slices [start, start + size).
typedef struct nvmlGpuInstancePlacement_st {
  unsigned int start;
  unsigned int size;
} nvmlGpuInstancePlacement_t;

// nvmlDeviceGetGpuInstanceProfileInfo (the unversioned, v1 struct).
typedef struct nvmlGpuInstanceProfileInfo_st {
  unsigned int id;  // profile ID within the device (e.g. 19 for 1g.10gb)
  unsigned int isP2pSupported;
  unsigned int sliceCount;     // compute slices
  unsigned int instanceCount;  // how many instances of it fit the GPU
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;  // MiB
} nvmlGpuInstanceProfileInfo_t;

typedef struct nvmlGpuInstanceInfo_st {
  nvmlDevice_t device;     // the parent GPU
  unsigned int id;         // GPU instance ID, unique within the GPU
  unsigned int profileId;  // nvmlGpuInstanceProfileInfo_t.id
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

// Where a compute instance sits: compute slices [start, start + size) of
// its GPU instance.
typedef struct nvmlComputeInstancePlacement_st {
  unsigned int start;
  unsigned int size;
} nvmlComputeInstancePlacement_t;

// nvmlGpuInstanceGetComputeInstanceProfileInfo (the unversioned, v1 struct).
typedef struct nvmlComputeInstanceProfileInfo_st {
  unsigned int id;  // profile ID within the GPU instance
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct nvmlComputeInstanceInfo_st {
  nvmlDevice_t device;            // the parent GPU
  nvmlGpuInstance_t gpuInstance;  // the parent GPU instance
  unsigned int id;  // compute instance ID, unique within the GPU instance
  unsigned int profileId;  // nvmlComputeInstanceProfileInfo_t.id
  nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

// The product brand (nvmlDeviceGetBrand).
typedef enum nvmlBrandType_enum {
  NVML_BRAND_UNKNOWN = 0,
  NVML_BRAND_QUADRO = 1,
  NVML_BRAND_TESLA = 2,
  NVML_BRAND_NVS = 3,
  NVML_BRAND_GRID = 4,  // no longer reported
  NVML_BRAND_GEFORCE = 5,
  NVML_BRAND_TITAN = 6,
  NVML_BRAND_NVIDIA_VAPPS = 7,  // NVIDIA Virtual Applications
  NVML_BRAND_NVIDIA_VPC = 8,    // NVIDIA Virtual PC
  NVML_BRAND_NVIDIA_VCS = 9,    // NVIDIA Virtual Compute Server
  NVML_BRAND_NVIDIA_VWS = 10,   // NVIDIA RTX Virtual Workstation
  NVML_BRAND_NVIDIA_CLOUD_GAMING = 11,
  NVML_BRAND_NVIDIA_VGAMING = NVML_BRAND_NVIDIA_CLOUD_GAMING,  // old name
  NVML_BRAND_QUADRO_RTX = 12,
  NVML_BRAND_NVIDIA_RTX = 13,
  NVML_BRAND_NVIDIA = 14,
  NVML_BRAND_GEFORCE_RTX = 15,
  NVML_BRAND_TITAN_RTX = 16,
  NVML_BRAND_COUNT = 17
} nvmlBrandType_t;

// The simplified chip architecture (nvmlDeviceGetArchitecture): a plain
// unsigned int, so that newer drivers may report values not listed here.
typedef unsigned int nvmlDeviceArchitecture_t;
#define NVML_DEVICE_ARCH_KEPLER 2
#define NVML_DEVICE_ARCH_MAXWELL 3
#define NVML_DEVICE_ARCH_PASCAL 4
#define NVML_DEVICE_ARCH_VOLTA 5
#define NVML_DEVICE_ARCH_TURING 6
#define NVML_DEVICE_ARCH_AMPERE 7
#define NVML_DEVICE_ARCH_ADA 8
#define NVML_DEVICE_ARCH_HOPPER 9
#define NVML_DEVICE_ARCH_BLACKWELL 10
#define NVML_DEVICE_ARCH_T23X 11  // Orin
#define NVML_DEVICE_ARCH_UNKNOWN 0xffffffff

typedef enum nvmlGpuLevel_enum {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50
} nvmlGpuTopologyLevel_t;

typedef enum nvmlIntNvLinkDeviceType_enum {
  NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
  NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
  NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
  NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF
} nvmlIntNvLinkDeviceType_t;

// Clock throttle reasons (nvmlDeviceGetCurrentClocksThrottleReasons), a
// bit mask. The slowdowns NVIDIA documents as a sign of trouble: HwSlowdown
// (the hardware cut clocks: thermal, power brake or power supply),
// SwThermalSlowdown (the driver cut clocks to cool the GPU), and the two
// hardware causes HwThermalSlowdown and HwPowerBrakeSlowdown.
#define nvmlClocksThrottleReasonGpuIdle 0x0000000000000001ULL
#define nvmlClocksThrottleReasonApplicationsClocksSetting 0x0000000000000002ULL
#define nvmlClocksThrottleReasonSwPowerCap 0x0000000000000004ULL
#define nvmlClocksThrottleReasonHwSlowdown 0x0000000000000008ULL
#define nvmlClocksThrottleReasonSyncBoost 0x0000000000000010ULL
#define nvmlClocksThrottleReasonSwThermalSlowdown 0x0000000000000020ULL
#define nvmlClocksThrottleReasonHwThermalSlowdown 0x0000000000000040ULL
#define nvmlClocksThrottleReasonHwPowerBrakeSlowdown 0x0000000000000080ULL
#define nvmlClocksThrottleReasonDisplayClockSetting 0x0000000000000100ULL
#define nvmlClocksThrottleReasonNone 0x0000000000000000ULL
// Every reason this API defines.
#define nvmlClocksThrottleReasonAll 0x00000000000001FFULL

// Field values (nvmlDeviceGetFieldValues): the caller sets fieldId (and
// scopeId where a field needs one) of each entry; NVML sets the rest, with
// a return code per entry (value is undefined unless it is NVML_SUCCESS).
typedef enum nvmlValueType_enum {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
  NVML_VALUE_TYPE_COUNT
} nvmlValueType_t;

typedef union nvmlValue_st {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} nvmlValue_t;

typedef struct nvmlFieldValue_st {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;    // CPU time of the value, microseconds since 1970
  long long latencyUsec;  // how long NVML took to update it
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;

// Field IDs. Volatile ECC counts are the errors since the driver last
// loaded (NVML: "reset each time the driver loads").
#define NVML_FI_DEV_ECC_SBE_VOL_TOTAL 3  // single-bit (corrected)
#define NVML_FI_DEV_ECC_DBE_VOL_TOTAL 4  // double-bit (uncorrectable)
// What the driver says must be done to use the GPU again (R565 and later),
// an nvmlDeviceGpuRecoveryAction_t.
#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION 230

// NVML_FI_DEV_GET_GPU_RECOVERY_ACTION values. NONE: usable again by
// starting a new process; GPU_RESET: reset the GPU (nvidia-smi -r);
// NODE_REBOOT: reboot the node; DRAIN_P2P: quiesce peer-to-peer traffic,
// then ask again (another action follows); DRAIN_AND_RESET: both. Later
// drivers added RECOVER_IMEX_DOMAIN, and (R615) BUS_RESET (reset the GPU's
// PCIe bus) and SYSTEM_REBOOT.
typedef enum nvmlDeviceGpuRecoveryAction_s {
  NVML_GPU_RECOVERY_ACTION_NONE = 0,
  NVML_GPU_RECOVERY_ACTION_GPU_RESET = 1,
  NVML_GPU_RECOVERY_ACTION_NODE_REBOOT = 2,
  NVML_GPU_RECOVERY_ACTION_DRAIN_P2P = 3,
  NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET = 4,
  NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN = 5,
  NVML_GPU_RECOVERY_ACTION_BUS_RESET = 6,
  NVML_GPU_RECOVERY_ACTION_SYSTEM_REBOOT = 7
} nvmlDeviceGpuRecoveryAction_t;

// Event types (bit mask).
#define nvmlEventTypeSingleBitEccError 0x0000000000000001LL
#define nvmlEventTypeDoubleBitEccError 0x0000000000000002LL
#define nvmlEventTypePState 0x0000000000000004LL
#define nvmlEventTypeXidCriticalError 0x0000000000000008LL
#define nvmlEventTypeClock 0x0000000000000010LL
#define nvmlEventTypeNone 0x0000000000000000LL

typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for nvmlEventTypeXidCriticalError
  unsigned int gpuInstanceId;    // 0xFFFFFFFF when not attributable
  unsigned int computeInstanceId;
} nvmlEventData_t;

// Function signatures, as pointer types for dlsym. The exported symbol name
// is the part after "Fn_" (e.g. Fn_nvmlInit_v2 -> "nvmlInit_v2").
typedef nvmlReturn_t (*Fn_nvmlInit_v2)(void);
typedef nvmlReturn_t (*Fn_nvmlInitWithFlags)(unsigned int flags);
typedef nvmlReturn_t (*Fn_nvmlShutdown)(void);
typedef const char* (*Fn_nvmlErrorString)(nvmlReturn_t result);
typedef nvmlReturn_t (*Fn_nvmlSystemGetDriverVersion)(char* version,
                                                      unsigned int length);
typedef nvmlReturn_t (*Fn_nvmlSystemGetCudaDriverVersion_v2)(int* version);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetCount_v2)(unsigned int* count);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetHandleByIndex_v2)(unsigned int index,
                                                         nvmlDevice_t* device);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetHandleByUUID)(const char* uuid,
                                                     nvmlDevice_t* device);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetName)(nvmlDevice_t device, char* name,
                                             unsigned int length);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetUUID)(nvmlDevice_t device, char* uuid,
                                             unsigned int length);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetMinorNumber)(nvmlDevice_t device,
                                                    unsigned int* minor);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetIndex)(nvmlDevice_t device,
                                              unsigned int* index);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetPciInfo_v3)(nvmlDevice_t device,
                                                   nvmlPciInfo_t* pci);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetMemoryInfo)(nvmlDevice_t device,
                                                   nvmlMemory_t* memory);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetCudaComputeCapability)(
    nvmlDevice_t device, int* major, int* minor);
// Brand (an old entry point) and architecture (R470 and later): optional in
// the client.
typedef nvmlReturn_t (*Fn_nvmlDeviceGetBrand)(nvmlDevice_t device,
                                              nvmlBrandType_t* type);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetArchitecture)(
    nvmlDevice_t device, nvmlDeviceArchitecture_t* arch);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetMigMode)(nvmlDevice_t device,
                                                unsigned int* current,
                                                unsigned int* pending);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetTopologyCommonAncestor)(
    nvmlDevice_t device1, nvmlDevice_t device2,
    nvmlGpuTopologyLevel_t* path_info);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetNvLinkState)(
    nvmlDevice_t device, unsigned int link, nvmlEnableState_t* is_active);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetNvLinkRemotePciInfo_v2)(
    nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetNvLinkRemoteDeviceType)(
    nvmlDevice_t device, unsigned int link, nvmlIntNvLinkDeviceType_t* type);
// GPU health beyond events. Row remapping (R450, Ampere and later; older
// GPUs answer NOT_SUPPORTED): rows remapped after correctable and
// uncorrectable errors, a remapping that waits for a GPU reset, and a
// remapping that failed. Retired pages pending (GPUs before Ampere, which
// retire pages instead; Ampere and later answer NOT_SUPPORTED): a retired
// page waits for a reset or reboot to take effect. PCIe link and clock
// throttle reasons: old entry points, all optional in the client.
typedef nvmlReturn_t (*Fn_nvmlDeviceGetRemappedRows)(
    nvmlDevice_t device, unsigned int* corr_rows, unsigned int* unc_rows,
    unsigned int* is_pending, unsigned int* failure_occurred);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetRetiredPagesPendingStatus)(
    nvmlDevice_t device, nvmlEnableState_t* is_pending);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetCurrPcieLinkGeneration)(
    nvmlDevice_t device, unsigned int* gen);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetMaxPcieLinkGeneration)(
    nvmlDevice_t device, unsigned int* gen);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetCurrPcieLinkWidth)(nvmlDevice_t device,
                                                          unsigned int* width);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetMaxPcieLinkWidth)(nvmlDevice_t device,
                                                         unsigned int* width);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetCurrentClocksThrottleReasons)(
    nvmlDevice_t device, unsigned long long* reasons);
// Values of several fields at once: SUCCESS when any entry was filled (each
// has its own return code), INVALID_ARGUMENT for a bad device or null
// `values`. Optional in the client.
typedef nvmlReturn_t (*Fn_nvmlDeviceGetFieldValues)(nvmlDevice_t device,
                                                    int values_count,
                                                    nvmlFieldValue_t* values);
typedef nvmlReturn_t (*Fn_nvmlEventSetCreate)(nvmlEventSet_t* set);
typedef nvmlReturn_t (*Fn_nvmlDeviceRegisterEvents)(
    nvmlDevice_t device, unsigned long long event_types, nvmlEventSet_t set);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetSupportedEventTypes)(
    nvmlDevice_t device, unsigned long long* event_types);
typedef nvmlReturn_t (*Fn_nvmlEventSetWait_v2)(nvmlEventSet_t set,
                                               nvmlEventData_t* data,
                                               unsigned int timeout_ms);
// The pre-R450 wait: writes only device, eventType and eventData.
typedef nvmlReturn_t (*Fn_nvmlEventSetWait)(nvmlEventSet_t set,
                                            nvmlEventData_t* data,
                                            unsigned int timeout_ms);
typedef nvmlReturn_t (*Fn_nvmlEventSetFree)(nvmlEventSet_t set);

// Multi-Instance GPU (R450 and later).
typedef nvmlReturn_t (*Fn_nvmlDeviceGetMaxMigDeviceCount)(nvmlDevice_t device,
                                                          unsigned int* count);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetMigDeviceHandleByIndex)(
    nvmlDevice_t device, unsigned int index, nvmlDevice_t* mig_device);
typedef nvmlReturn_t (*Fn_nvmlDeviceIsMigDeviceHandle)(
    nvmlDevice_t device, unsigned int* is_mig_device);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(
    nvmlDevice_t mig_device, nvmlDevice_t* device);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetGpuInstanceId)(nvmlDevice_t device,
                                                      unsigned int* id);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetComputeInstanceId)(nvmlDevice_t device,
                                                          unsigned int* id);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetAttributes_v2)(
    nvmlDevice_t device, nvmlDeviceAttributes_t* attributes);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetGpuInstanceProfileInfo)(
    nvmlDevice_t device, unsigned int profile,
    nvmlGpuInstanceProfileInfo_t* info);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetGpuInstances)(
    nvmlDevice_t device, unsigned int profile_id,
    nvmlGpuInstance_t* gpu_instances, unsigned int* count);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetGpuInstanceById)(
    nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t* gpu_instance);
typedef nvmlReturn_t (*Fn_nvmlGpuInstanceGetInfo)(
    nvmlGpuInstance_t gpu_instance, nvmlGpuInstanceInfo_t* info);
typedef nvmlReturn_t (*Fn_nvmlGpuInstanceGetComputeInstanceProfileInfo)(
    nvmlGpuInstance_t gpu_instance, unsigned int profile,
    unsigned int eng_profile, nvmlComputeInstanceProfileInfo_t* info);
typedef nvmlReturn_t (*Fn_nvmlGpuInstanceGetComputeInstances)(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    nvmlComputeInstance_t* compute_instances, unsigned int* count);
typedef nvmlReturn_t (*Fn_nvmlGpuInstanceGetComputeInstanceById)(
    nvmlGpuInstance_t gpu_instance, unsigned int id,
    nvmlComputeInstance_t* compute_instance);
typedef nvmlReturn_t (*Fn_nvmlComputeInstanceGetInfo_v2)(
    nvmlComputeInstance_t compute_instance, nvmlComputeInstanceInfo_t* info);
// Making and destroying MIG instances (root only). SetMigMode sets the
// pending mode; *activation_status says whether it became current (IN_USE
// while the GPU is not idle, RESET_REQUIRED where a reset is needed).
// Possible placements are every placement of a profile, MIG on or not; a
// placement that overlaps a GPU instance fails creation with
// INSUFFICIENT_RESOURCES; destroying an instance in use is IN_USE.
typedef nvmlReturn_t (*Fn_nvmlDeviceSetMigMode)(
    nvmlDevice_t device, unsigned int mode, nvmlReturn_t* activation_status);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetGpuInstancePossiblePlacements_v2)(
    nvmlDevice_t device, unsigned int profile_id,
    nvmlGpuInstancePlacement_t* placements, unsigned int* count);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetGpuInstanceRemainingCapacity)(
    nvmlDevice_t device, unsigned int profile_id, unsigned int* count);
typedef nvmlReturn_t (*Fn_nvmlDeviceCreateGpuInstance)(
    nvmlDevice_t device, unsigned int profile_id,
    nvmlGpuInstance_t* gpu_instance);
typedef nvmlReturn_t (*Fn_nvmlDeviceCreateGpuInstanceWithPlacement)(
    nvmlDevice_t device, unsigned int profile_id,
    const nvmlGpuInstancePlacement_t* placement,
    nvmlGpuInstance_t* gpu_instance);
typedef nvmlReturn_t (*Fn_nvmlGpuInstanceDestroy)(
    nvmlGpuInstance_t gpu_instance);
typedef nvmlReturn_t (*Fn_nvmlGpuInstanceGetComputeInstanceRemainingCapacity)(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    unsigned int* count);
typedef nvmlReturn_t (*Fn_nvmlGpuInstanceGetComputeInstancePossiblePlacements)(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    nvmlComputeInstancePlacement_t* placements, unsigned int* count);
typedef nvmlReturn_t (*Fn_nvmlGpuInstanceCreateComputeInstance)(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    nvmlComputeInstance_t* compute_instance);
typedef nvmlReturn_t (*Fn_nvmlGpuInstanceCreateComputeInstanceWithPlacement)(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    const nvmlComputeInstancePlacement_t* placement,
    nvmlComputeInstance_t* compute_instance);
typedef nvmlReturn_t (*Fn_nvmlComputeInstanceDestroy)(
    nvmlComputeInstance_t compute_instance);

// Per-cgroup GPU memory limits (R615 / CUDA 13.4 and later; Linux, cgroup
// v2, GPUs only: MIG device handles are refused). `nameSpace` is the full
// path of a cgroup v2 directory; limits are in bytes. No limit is set when
// softLimit is 0 and hardLimit is NVML_DEVICE_MEMORY_LIMIT_MAX; setting
// that pair clears a cgroup's limits. Neither struct has a version field.
#define NVML_DEVICE_MEMORY_LIMIT_MAX 0xFFFFFFFFFFFFFFFFULL

typedef struct nvmlSetMemoryLimits_v1_st {
  const char* nameSpace;
  unsigned long long softLimit;  // reservation; 0 = none
  unsigned long long hardLimit;  // allocations past it fail
} nvmlSetMemoryLimits_v1_t;

typedef struct nvmlGetMemoryLimits_v1_st {
  const char* nameSpace;  // in
  unsigned long long softLimit;
  unsigned long long hardLimit;
  unsigned long long currentUsed;  // GPU memory the cgroup uses now
} nvmlGetMemoryLimits_v1_t;

// Sets (privileged: NO_PERMISSION otherwise) and reads (unprivileged) the
// limits of cgroup `limits->nameSpace` on GPU `device`. Optional in the
// client: a library older than R615 lacks them.
typedef nvmlReturn_t (*Fn_nvmlDeviceSetMemoryLimits_v1)(
    nvmlDevice_t device, nvmlSetMemoryLimits_v1_t* limits);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetMemoryLimits_v1)(
    nvmlDevice_t device, nvmlGetMemoryLimits_v1_t* limits);

}  // extern "C"

#endif  // GDP_NVML_NVML_API_H_
