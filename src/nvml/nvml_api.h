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

// Opaque handles.
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

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
typedef nvmlReturn_t (*Fn_nvmlEventSetCreate)(nvmlEventSet_t* set);
typedef nvmlReturn_t (*Fn_nvmlDeviceRegisterEvents)(
    nvmlDevice_t device, unsigned long long event_types, nvmlEventSet_t set);
typedef nvmlReturn_t (*Fn_nvmlDeviceGetSupportedEventTypes)(
    nvmlDevice_t device, unsigned long long* event_types);
typedef nvmlReturn_t (*Fn_nvmlEventSetWait_v2)(nvmlEventSet_t set,
                                               nvmlEventData_t* data,
                                               unsigned int timeout_ms);
typedef nvmlReturn_t (*Fn_nvmlEventSetFree)(nvmlEventSet_t set);

}  // extern "C"

#endif  // GDP_NVML_NVML_API_H_
