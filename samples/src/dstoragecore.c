/*
 * STAND-IN for Microsoft DirectStorage dstoragecore.dll (sample only; NOT the real DLL).
 *
 * The implementation half of the dstorage.dll stand-in: one export that fails with E_NOTIMPL.
 * Licence: LicenseRef-NInfer-Sample-Stand-In (samples/licenses/NInfer-Sample-Stand-In.txt).
 */
#include <windows.h>

#define NINFER_E_NOTIMPL ((HRESULT)0x80004001L)

HRESULT NInferStandInCreateCompressionCodec(int format, UINT32 threads, const GUID *riid, void **ppv) {
    (void)format;
    (void)threads;
    (void)riid;
    if (ppv) *ppv = 0;
    return NINFER_E_NOTIMPL;
}

BOOL WINAPI ninfer_dll_entry(HINSTANCE instance, DWORD reason, LPVOID reserved) {
    (void)instance;
    (void)reason;
    (void)reserved;
    return TRUE;
}
