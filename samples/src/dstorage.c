/*
 * STAND-IN for Microsoft DirectStorage dstorage.dll (sample only; NOT the real DLL).
 *
 * No registry reachable from the sample tooling carries the DirectStorage redistributable, so
 * the samples ship this tiny DLL under the real file name, marked `stand_in: true` in the lock
 * and in its VERSIONINFO. It exports the public DirectStorage entry points with their real
 * signatures; every call fails with E_NOTIMPL. DStorageCreateCompressionCodec is passed on to
 * the dstoragecore.dll stand-in so the pair has the real DLLs' import relationship.
 * Licence: LicenseRef-NInfer-Sample-Stand-In (samples/licenses/NInfer-Sample-Stand-In.txt).
 */
#include <windows.h>

#define NINFER_E_NOTIMPL ((HRESULT)0x80004001L)

__declspec(dllimport) HRESULT NInferStandInCreateCompressionCodec(int format, UINT32 threads,
                                                                  const GUID *riid, void **ppv);

HRESULT DStorageGetFactory(const GUID *riid, void **ppv) {
    (void)riid;
    if (ppv) *ppv = 0;
    return NINFER_E_NOTIMPL;
}

HRESULT DStorageSetConfiguration(const void *configuration) {
    (void)configuration;
    return NINFER_E_NOTIMPL;
}

HRESULT DStorageCreateCompressionCodec(int format, UINT32 threads, const GUID *riid, void **ppv) {
    return NInferStandInCreateCompressionCodec(format, threads, riid, ppv);
}

BOOL WINAPI ninfer_dll_entry(HINSTANCE instance, DWORD reason, LPVOID reserved) {
    (void)instance;
    (void)reason;
    (void)reserved;
    return TRUE;
}
