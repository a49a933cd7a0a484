/* The CUDA runtime and driver entry points libprof records (category cuda_api), as one
 * X-macro table: X(name, base, since, pt, kind).
 *
 *   name   the exported symbol, and the event's name
 *   base   driver: the name cuGetProcAddress is asked for (cuMemAlloc for cuMemAlloc_v2)
 *   since  driver: the cudaVersion from which that request returns this ABI, from
 *          cudaTypedefs.h's PFN_<base>_v<since> (CUDA 13.0); 0 for the runtime
 *   pt     the per-thread-default-stream twin (_ptsz, _ptds), what the request gives
 *          with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 *   kind   enum cuda_kind (cuda_api.h): a plain call, or a getter of driver pointers
 *
 * Runtime names are libcudart.so.13's exports (cuda_runtime_api.h, crt/device_functions.h
 * for __cudaLaunchKernel); driver names lib64/stubs/libcuda.so's (cuda.h). Rows of one
 * base are kept together. No prototypes: the wrappers forward every argument word
 * (cuda_api.c), so a function may be listed only if it returns an int and takes
 * integer-class arguments (no float or double) filling at most 6 registers and 8 stack
 * words. */
#ifndef PROF_PRELOAD_CUDA_FUNCS_H
#define PROF_PRELOAD_CUDA_FUNCS_H

#define CUDA_RT_(X, n) X(n, n, 0, 0, CUDA_PLAIN)
#define CUDA_RT_P(X, n) CUDA_RT_(X, n) X(n##_ptsz, n, 0, 1, CUDA_PLAIN)
#define CUDA_RT_D(X, n) CUDA_RT_(X, n) X(n##_ptds, n, 0, 1, CUDA_PLAIN)
#define CUDA_DRV(X, n, base, v) X(n, base, v, 0, CUDA_PLAIN)
#define CUDA_DRV_P(X, n, base, v, pv) CUDA_DRV(X, n, base, v) X(n##_ptsz, base, pv, 1, CUDA_PLAIN)
#define CUDA_DRV_D(X, n, base, v, pv) CUDA_DRV(X, n, base, v) X(n##_ptds, base, pv, 1, CUDA_PLAIN)

#define CUDA_RUNTIME_FUNCS(X)                                                              \
	/* launches */                                                                     \
	CUDA_RT_P(X, cudaLaunchKernel)                                                     \
	CUDA_RT_P(X, cudaLaunchKernelExC)                                                  \
	CUDA_RT_P(X, cudaLaunchCooperativeKernel)                                          \
	CUDA_RT_P(X, cudaLaunchHostFunc)                                                   \
	CUDA_RT_P(X, __cudaLaunchKernel) /* nvcc 13's <<<>>> */                            \
	/* copies */                                                                       \
	CUDA_RT_D(X, cudaMemcpy)                                                           \
	CUDA_RT_D(X, cudaMemcpy2D)                                                         \
	CUDA_RT_D(X, cudaMemcpy3D)                                                         \
	CUDA_RT_(X, cudaMemcpyPeer)                                                        \
	CUDA_RT_D(X, cudaMemcpy3DPeer)                                                     \
	CUDA_RT_D(X, cudaMemcpyToSymbol)                                                   \
	CUDA_RT_D(X, cudaMemcpyFromSymbol)                                                 \
	CUDA_RT_D(X, cudaMemcpyToArray) /* gone from the 13 headers, still exported */     \
	CUDA_RT_D(X, cudaMemcpyFromArray)                                                  \
	CUDA_RT_D(X, cudaMemcpyArrayToArray)                                               \
	CUDA_RT_D(X, cudaMemcpy2DToArray)                                                  \
	CUDA_RT_D(X, cudaMemcpy2DFromArray)                                                \
	CUDA_RT_D(X, cudaMemcpy2DArrayToArray)                                             \
	CUDA_RT_P(X, cudaMemcpyAsync)                                                      \
	CUDA_RT_P(X, cudaMemcpy2DAsync)                                                    \
	CUDA_RT_P(X, cudaMemcpy3DAsync)                                                    \
	CUDA_RT_(X, cudaMemcpyPeerAsync)                                                   \
	CUDA_RT_P(X, cudaMemcpy3DPeerAsync)                                                \
	CUDA_RT_P(X, cudaMemcpyBatchAsync)                                                 \
	CUDA_RT_P(X, cudaMemcpy3DBatchAsync)                                               \
	CUDA_RT_P(X, cudaMemcpyToSymbolAsync)                                              \
	CUDA_RT_P(X, cudaMemcpyFromSymbolAsync)                                            \
	CUDA_RT_P(X, cudaMemcpyToArrayAsync)                                               \
	CUDA_RT_P(X, cudaMemcpyFromArrayAsync)                                             \
	CUDA_RT_P(X, cudaMemcpy2DToArrayAsync)                                             \
	CUDA_RT_P(X, cudaMemcpy2DFromArrayAsync)                                           \
	/* sets */                                                                         \
	CUDA_RT_D(X, cudaMemset)                                                           \
	CUDA_RT_D(X, cudaMemset2D)                                                         \
	CUDA_RT_D(X, cudaMemset3D)                                                         \
	CUDA_RT_P(X, cudaMemsetAsync)                                                      \
	CUDA_RT_P(X, cudaMemset2DAsync)                                                    \
	CUDA_RT_P(X, cudaMemset3DAsync)                                                    \
	/* allocation */                                                                   \
	CUDA_RT_(X, cudaMalloc)                                                            \
	CUDA_RT_(X, cudaFree)                                                              \
	CUDA_RT_P(X, cudaMallocAsync)                                                      \
	CUDA_RT_P(X, cudaFreeAsync)                                                        \
	CUDA_RT_P(X, cudaMallocFromPoolAsync)                                              \
	CUDA_RT_(X, cudaMallocHost)                                                        \
	CUDA_RT_(X, cudaHostAlloc)                                                         \
	CUDA_RT_(X, cudaFreeHost)                                                          \
	CUDA_RT_(X, cudaHostRegister)                                                      \
	CUDA_RT_(X, cudaHostUnregister)                                                    \
	CUDA_RT_(X, cudaMallocManaged)                                                     \
	CUDA_RT_(X, cudaMallocPitch)                                                       \
	CUDA_RT_(X, cudaMalloc3D)                                                          \
	CUDA_RT_(X, cudaMallocArray)                                                       \
	CUDA_RT_(X, cudaMalloc3DArray)                                                     \
	CUDA_RT_(X, cudaMallocMipmappedArray)                                              \
	CUDA_RT_(X, cudaFreeArray)                                                         \
	CUDA_RT_(X, cudaFreeMipmappedArray)                                                \
	/* synchronization */                                                              \
	CUDA_RT_(X, cudaDeviceSynchronize)                                                 \
	CUDA_RT_P(X, cudaStreamSynchronize)                                                \
	CUDA_RT_(X, cudaEventSynchronize)                                                  \
	CUDA_RT_P(X, cudaStreamWaitEvent)                                                  \
	CUDA_RT_P(X, cudaStreamQuery)                                                      \
	CUDA_RT_(X, cudaEventQuery)                                                        \
	CUDA_RT_P(X, cudaEventRecord)                                                      \
	CUDA_RT_P(X, cudaEventRecordWithFlags)                                             \
	/* graphs and stream capture */                                                    \
	CUDA_RT_P(X, cudaGraphLaunch)                                                      \
	CUDA_RT_P(X, cudaGraphUpload)                                                      \
	CUDA_RT_(X, cudaGraphInstantiate)                                                  \
	CUDA_RT_(X, cudaGraphInstantiateWithFlags)                                         \
	CUDA_RT_P(X, cudaGraphInstantiateWithParams)                                       \
	CUDA_RT_P(X, cudaStreamBeginCapture)                                               \
	CUDA_RT_P(X, cudaStreamBeginCaptureToGraph)                                        \
	CUDA_RT_P(X, cudaStreamEndCapture)                                                 \
	/* devices, streams, events */                                                     \
	CUDA_RT_(X, cudaGetDeviceCount)                                                    \
	CUDA_RT_(X, cudaSetDevice)                                                         \
	CUDA_RT_(X, cudaDeviceReset)                                                       \
	CUDA_RT_(X, cudaStreamCreate)                                                      \
	CUDA_RT_(X, cudaStreamCreateWithFlags)                                             \
	CUDA_RT_(X, cudaStreamCreateWithPriority)                                          \
	CUDA_RT_(X, cudaStreamDestroy)                                                     \
	CUDA_RT_(X, cudaEventCreate)                                                       \
	CUDA_RT_(X, cudaEventCreateWithFlags)                                              \
	CUDA_RT_(X, cudaEventDestroy)                                                      \
	/* driver pointers handed out by the runtime */                                    \
	X(cudaGetDriverEntryPoint, cudaGetDriverEntryPoint, 0, 0, CUDA_RT_ENTRY)           \
	X(cudaGetDriverEntryPoint_ptsz, cudaGetDriverEntryPoint, 0, 1, CUDA_RT_ENTRY)      \
	X(cudaGetDriverEntryPointByVersion, cudaGetDriverEntryPointByVersion, 0, 0,        \
	  CUDA_RT_ENTRY_VERSION)                                                           \
	X(cudaGetDriverEntryPointByVersion_ptsz, cudaGetDriverEntryPointByVersion, 0, 1,   \
	  CUDA_RT_ENTRY_VERSION)

#define CUDA_DRIVER_FUNCS(X)                                                               \
	X(cuGetProcAddress, cuGetProcAddress, 11030, 0, CUDA_DRV_GETPROC)                  \
	X(cuGetProcAddress_v2, cuGetProcAddress, 12000, 0, CUDA_DRV_GETPROC)               \
	CUDA_DRV(X, cuInit, cuInit, 2000)                                                  \
	/* launches */                                                                     \
	CUDA_DRV_P(X, cuLaunchKernel, cuLaunchKernel, 4000, 7000)                          \
	CUDA_DRV_P(X, cuLaunchKernelEx, cuLaunchKernelEx, 11060, 11060)                    \
	CUDA_DRV_P(X, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 9000, 9000)    \
	CUDA_DRV(X, cuLaunchCooperativeKernelMultiDevice,                                  \
		 cuLaunchCooperativeKernelMultiDevice, 9000)                               \
	CUDA_DRV_P(X, cuLaunchHostFunc, cuLaunchHostFunc, 10000, 10000)                    \
	CUDA_DRV(X, cuLaunch, cuLaunch, 2000)                                              \
	CUDA_DRV(X, cuLaunchGrid, cuLaunchGrid, 2000)                                      \
	CUDA_DRV(X, cuLaunchGridAsync, cuLaunchGridAsync, 2000)                            \
	/* copies (the unsuffixed cuMemcpyHtoD... are the 32-bit ABI: not listed) */       \
	CUDA_DRV_D(X, cuMemcpy, cuMemcpy, 4000, 7000)                                      \
	CUDA_DRV_P(X, cuMemcpyAsync, cuMemcpyAsync, 4000, 7000)                            \
	CUDA_DRV_D(X, cuMemcpyPeer, cuMemcpyPeer, 4000, 7000)                              \
	CUDA_DRV_P(X, cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000, 7000)                    \
	CUDA_DRV_D(X, cuMemcpyHtoD_v2, cuMemcpyHtoD, 3020, 7000)                           \
	CUDA_DRV_D(X, cuMemcpyDtoH_v2, cuMemcpyDtoH, 3020, 7000)                           \
	CUDA_DRV_D(X, cuMemcpyDtoD_v2, cuMemcpyDtoD, 3020, 7000)                           \
	CUDA_DRV_P(X, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, 3020, 7000)                 \
	CUDA_DRV_P(X, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, 3020, 7000)                 \
	CUDA_DRV_P(X, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, 3020, 7000)                 \
	CUDA_DRV_D(X, cuMemcpy2D_v2, cuMemcpy2D, 3020, 7000)                               \
	CUDA_DRV_D(X, cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned, 3020, 7000)             \
	CUDA_DRV_P(X, cuMemcpy2DAsync_v2, cuMemcpy2DAsync, 3020, 7000)                     \
	CUDA_DRV_D(X, cuMemcpy3D_v2, cuMemcpy3D, 3020, 7000)                               \
	CUDA_DRV_P(X, cuMemcpy3DAsync_v2, cuMemcpy3DAsync, 3020, 7000)                     \
	CUDA_DRV_D(X, cuMemcpy3DPeer, cuMemcpy3DPeer, 4000, 7000)                          \
	CUDA_DRV_P(X, cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync, 4000, 7000)                \
	CUDA_DRV_P(X, cuMemcpyBatchAsync, cuMemcpyBatchAsync, 12080, 12080)                \
	CUDA_DRV_P(X, cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync, 13000, 13000)             \
	CUDA_DRV_P(X, cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync, 12080, 12080)            \
	CUDA_DRV_P(X, cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync, 13000, 13000)         \
	CUDA_DRV_D(X, cuMemcpyHtoA_v2, cuMemcpyHtoA, 3020, 7000)                           \
	CUDA_DRV_D(X, cuMemcpyAtoH_v2, cuMemcpyAtoH, 3020, 7000)                           \
	CUDA_DRV_D(X, cuMemcpyAtoD_v2, cuMemcpyAtoD, 3020, 7000)                           \
	CUDA_DRV_D(X, cuMemcpyDtoA_v2, cuMemcpyDtoA, 3020, 7000)                           \
	CUDA_DRV_D(X, cuMemcpyAtoA_v2, cuMemcpyAtoA, 3020, 7000)                           \
	CUDA_DRV_P(X, cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync, 3020, 7000)                 \
	CUDA_DRV_P(X, cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync, 3020, 7000)                 \
	/* sets */                                                                         \
	CUDA_DRV_D(X, cuMemsetD8_v2, cuMemsetD8, 3020, 7000)                               \
	CUDA_DRV_D(X, cuMemsetD16_v2, cuMemsetD16, 3020, 7000)                             \
	CUDA_DRV_D(X, cuMemsetD32_v2, cuMemsetD32, 3020, 7000)                             \
	CUDA_DRV_D(X, cuMemsetD2D8_v2, cuMemsetD2D8, 3020, 7000)                           \
	CUDA_DRV_D(X, cuMemsetD2D16_v2, cuMemsetD2D16, 3020, 7000)                         \
	CUDA_DRV_D(X, cuMemsetD2D32_v2, cuMemsetD2D32, 3020, 7000)                         \
	CUDA_DRV_P(X, cuMemsetD8Async, cuMemsetD8Async, 3020, 7000)                        \
	CUDA_DRV_P(X, cuMemsetD16Async, cuMemsetD16Async, 3020, 7000)                      \
	CUDA_DRV_P(X, cuMemsetD32Async, cuMemsetD32Async, 3020, 7000)                      \
	CUDA_DRV_P(X, cuMemsetD2D8Async, cuMemsetD2D8Async, 3020, 7000)                    \
	CUDA_DRV_P(X, cuMemsetD2D16Async, cuMemsetD2D16Async, 3020, 7000)                  \
	CUDA_DRV_P(X, cuMemsetD2D32Async, cuMemsetD2D32Async, 3020, 7000)                  \
	/* allocation */                                                                   \
	CUDA_DRV(X, cuMemAlloc_v2, cuMemAlloc, 3020)                                       \
	CUDA_DRV(X, cuMemAllocPitch_v2, cuMemAllocPitch, 3020)                             \
	CUDA_DRV(X, cuMemFree_v2, cuMemFree, 3020)                                         \
	CUDA_DRV(X, cuMemAllocHost_v2, cuMemAllocHost, 3020)                               \
	CUDA_DRV(X, cuMemHostAlloc, cuMemHostAlloc, 2020)                                  \
	CUDA_DRV(X, cuMemFreeHost, cuMemFreeHost, 2000)                                    \
	CUDA_DRV(X, cuMemHostRegister_v2, cuMemHostRegister, 6050)                         \
	CUDA_DRV(X, cuMemHostUnregister, cuMemHostUnregister, 4000)                        \
	CUDA_DRV(X, cuMemAllocManaged, cuMemAllocManaged, 6000)                            \
	CUDA_DRV_P(X, cuMemAllocAsync, cuMemAllocAsync, 11020, 11020)                      \
	CUDA_DRV_P(X, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, 11020)      \
	CUDA_DRV_P(X, cuMemFreeAsync, cuMemFreeAsync, 11020, 11020)                        \
	/* virtual memory management */                                                    \
	CUDA_DRV(X, cuMemAddressReserve, cuMemAddressReserve, 10020)                       \
	CUDA_DRV(X, cuMemAddressFree, cuMemAddressFree, 10020)                             \
	CUDA_DRV(X, cuMemCreate, cuMemCreate, 10020)                                       \
	CUDA_DRV(X, cuMemRelease, cuMemRelease, 10020)                                     \
	CUDA_DRV(X, cuMemMap, cuMemMap, 10020)                                             \
	CUDA_DRV(X, cuMemUnmap, cuMemUnmap, 10020)                                         \
	CUDA_DRV(X, cuMemSetAccess, cuMemSetAccess, 10020)                                 \
	CUDA_DRV_P(X, cuMemMapArrayAsync, cuMemMapArrayAsync, 11010, 11010)                \
	/* synchronization (cuCtxSynchronize_v2, new in 13, takes a context) */            \
	CUDA_DRV(X, cuCtxSynchronize, cuCtxSynchronize, 2000)                              \
	CUDA_DRV(X, cuCtxSynchronize_v2, cuCtxSynchronize, 13000)                          \
	CUDA_DRV_P(X, cuStreamSynchronize, cuStreamSynchronize, 2000, 7000)                \
	CUDA_DRV(X, cuEventSynchronize, cuEventSynchronize, 2000)                          \
	CUDA_DRV_P(X, cuStreamWaitEvent, cuStreamWaitEvent, 3020, 7000)                    \
	CUDA_DRV_P(X, cuStreamQuery, cuStreamQuery, 2000, 7000)                            \
	CUDA_DRV(X, cuEventQuery, cuEventQuery, 2000)                                      \
	CUDA_DRV_P(X, cuEventRecord, cuEventRecord, 2000, 7000)                            \
	CUDA_DRV_P(X, cuEventRecordWithFlags, cuEventRecordWithFlags, 11010, 11010)        \
	CUDA_DRV_P(X, cuStreamWaitValue32_v2, cuStreamWaitValue32, 11070, 11070)           \
	CUDA_DRV_P(X, cuStreamWaitValue64_v2, cuStreamWaitValue64, 11070, 11070)           \
	/* graphs and stream capture */                                                    \
	CUDA_DRV_P(X, cuGraphLaunch, cuGraphLaunch, 10000, 10000)                          \
	CUDA_DRV_P(X, cuGraphUpload, cuGraphUpload, 11010, 11010)                          \
	CUDA_DRV(X, cuGraphInstantiate_v2, cuGraphInstantiate, 11000)                      \
	CUDA_DRV(X, cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040)       \
	CUDA_DRV_P(X, cuGraphInstantiateWithParams, cuGraphInstantiateWithParams, 12000,   \
		   12000)                                                                  \
	CUDA_DRV_P(X, cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010, 10010)         \
	CUDA_DRV_P(X, cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, 12030,     \
		   12030)                                                                  \
	CUDA_DRV_P(X, cuStreamEndCapture, cuStreamEndCapture, 10000, 10000)

#define CUDA_FUNCS(X) CUDA_RUNTIME_FUNCS(X) CUDA_DRIVER_FUNCS(X)

#endif
