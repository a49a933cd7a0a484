/* What libprof's CUDA test programs pass and the fake libraries check (the fakes return
 * an error for anything else: a wrapper that shifted or lost an argument shows). */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#define FAKE_FUNC ((void *)0x1001)
#define FAKE_STREAM ((void *)0x99)
#define FAKE_PARAMS ((void **)0xaa0)
#define FAKE_EXTRA ((void **)0xbb0)
#define FAKE_SHMEM 8
#define FAKE_BYTES 4096
#define FAKE_COPY 64
#define FAKE_DEVPTR 0x7000000000ull
#define FAKE_PITCH_ALIGN 512
#define FAKE_HOSTPTR 0x6000000000ull
/* the result a program records for a function it found no pointer to */
#define FAKE_MISSING 999

#endif
