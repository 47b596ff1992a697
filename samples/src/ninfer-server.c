/*
 * NInfer engine stand-in (sample; NOT the real engine).
 *
 * A tiny console program that stands in for ninfer-server.exe in the sample staged trees that
 * `ninfer-release samples fetch` lays out. It exists so the release pipeline has a real PE
 * executable whose import table names the DLLs the real engine loads: the CUDA runtime
 * (cudart64_13.dll), the MSVC C++ runtime (msvcp140.dll, vcruntime140.dll, vcruntime140_1.dll)
 * and DirectStorage (dstorage.dll). Run on Windows it prints what it is and the CUDA runtime
 * version, then exits 0; it serves nothing.
 *
 * Built freestanding (no C runtime start-up code) by samples/build-standins.sh, once per CUDA
 * arch: -DNINFER_CUDA_ARCH=sm_89 for the RTX 4090 lane, sm_86 for the RTX 3090 lane, so the two
 * lanes ship different bytes. Licence: Apache-2.0 (samples/licenses/Apache-2.0.txt).
 */
#include <windows.h>

#ifndef NINFER_CUDA_ARCH
#error "build with -DNINFER_CUDA_ARCH=sm_89 (or sm_86)"
#endif
#define NINFER_STR2(x) #x
#define NINFER_STR(x) NINFER_STR2(x)

/* Real exports of cudart64_13.dll (CUDA 13.x runtime API). */
__declspec(dllimport) int cudaRuntimeGetVersion(int *runtime_version);
__declspec(dllimport) int cudaGetDeviceCount(int *count);
/* Real exports of msvcp140.dll / vcruntime140.dll / vcruntime140_1.dll. */
__declspec(dllimport) long long _Query_perf_frequency(void);
__declspec(dllimport) void *memset(void *dest, int c, unsigned long long count);
__declspec(dllimport) int __CxxFrameHandler4(void);
/* Real export of dstorage.dll (Microsoft DirectStorage; a stand-in DLL in the samples). */
__declspec(dllimport) long DStorageGetFactory(const GUID *riid, void **ppv);

static const char banner[] =
    "NInfer engine stand-in (sample; not the real engine) 0.7.0-beta.2, CUDA arch "
    NINFER_STR(NINFER_CUDA_ARCH) "\r\n";

/* Keeps the vcruntime140_1 import: MSVC-built C++ engines reference it for exception unwinding. */
volatile const void *const ninfer_unwind_handler = (const void *)&__CxxFrameHandler4;

static void put(HANDLE out, const char *s, DWORD n) {
    DWORD written = 0;
    WriteFile(out, s, n, &written, 0);
}

static DWORD format_uint(char *buf, unsigned int v) {
    char tmp[16];
    DWORD n = 0, i = 0;
    do {
        tmp[n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0u && n < sizeof tmp);
    while (n > 0) buf[i++] = tmp[--n];
    return i;
}

void __stdcall ninfer_start(void) {
    HANDLE out = GetStdHandle(STD_OUTPUT_HANDLE);
    char line[64];
    int version = 0, devices = 0;
    void *factory = 0;
    DWORD n;

    memset(line, 0, sizeof line);
    put(out, banner, sizeof banner - 1);

    if (cudaRuntimeGetVersion(&version) == 0) {
        static const char label[] = "CUDA runtime version: ";
        put(out, label, sizeof label - 1);
        n = format_uint(line, (unsigned int)version);
        line[n++] = '\r';
        line[n++] = '\n';
        put(out, line, n);
    }
    if (cudaGetDeviceCount(&devices) == 0) {
        static const char label[] = "CUDA devices: ";
        put(out, label, sizeof label - 1);
        n = format_uint(line, (unsigned int)devices);
        line[n++] = '\r';
        line[n++] = '\n';
        put(out, line, n);
    }
    if (_Query_perf_frequency() <= 0) {
        static const char msg[] = "no performance counter\r\n";
        put(out, msg, sizeof msg - 1);
    }
    if (DStorageGetFactory(0, &factory) < 0) {
        static const char msg[] = "DirectStorage: stand-in (no factory)\r\n";
        put(out, msg, sizeof msg - 1);
    }
    ExitProcess(0);
}
