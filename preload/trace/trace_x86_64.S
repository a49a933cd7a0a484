/* Generic entry/exit for traced functions of unknown signature (x86-64 SysV).
 *
 * A per-function stub loads its index into %r11 and jumps to prof_trace_entry, which
 * saves every argument register (and %al, the vector count of varargs calls), lets
 * prof_trace_enter() record the entry and replace the return address on the stack by
 * prof_trace_exit, restores the registers and enters the real function with the
 * caller's stack as it was (stack arguments and varargs stay where they were). A hook
 * (PROFILER_FOLLOW) reads the integer arguments from the saved registers.
 * prof_trace_exit runs when the real function returns: it keeps the return registers
 * (rax, rdx, xmm0, xmm1; st0 is not touched by the C code) across prof_trace_leave(),
 * which records the exit and gives back the original return address (after writing
 * it back into the dead return slot, so the frame unwinds by its CFI). */

	.text
	.globl	prof_trace_entry
	.hidden	prof_trace_entry
	.type	prof_trace_entry, @function
prof_trace_entry:
	.cfi_startproc
	/* entry: rsp = 8 mod 16; 8 GPRs + 8 xmm + 8 pad = 200 bytes keeps 16-alignment */
	subq	$200, %rsp
	.cfi_adjust_cfa_offset 200
	movq	%rdi, 0(%rsp)
	movq	%rsi, 8(%rsp)
	movq	%rdx, 16(%rsp)
	movq	%rcx, 24(%rsp)
	movq	%r8, 32(%rsp)
	movq	%r9, 40(%rsp)
	movq	%rax, 48(%rsp)
	movq	%r10, 56(%rsp)
	movdqu	%xmm0, 64(%rsp)
	movdqu	%xmm1, 80(%rsp)
	movdqu	%xmm2, 96(%rsp)
	movdqu	%xmm3, 112(%rsp)
	movdqu	%xmm4, 128(%rsp)
	movdqu	%xmm5, 144(%rsp)
	movdqu	%xmm6, 160(%rsp)
	movdqu	%xmm7, 176(%rsp)
	movl	%r11d, %edi		/* the stub's index */
	leaq	200(%rsp), %rsi		/* where the return address is */
	movq	%rsp, %rdx		/* the saved argument registers */
	call	prof_trace_enter	/* -> the real function */
	movq	%rax, %r11
	/* Replaced return address: the real function is entered by the call below, which
	 * stores prof_trace_exit into that same slot, so the CPU's return-stack predictor
	 * sees the real function's ret coming (a jmp there cost a mispredicted return,
	 * ~4 ns a call). The flags set here survive the movs and leas that follow. */
	leaq	prof_trace_exit(%rip), %rax
	cmpq	%rax, 200(%rsp)
	movq	0(%rsp), %rdi
	movq	8(%rsp), %rsi
	movq	16(%rsp), %rdx
	movq	24(%rsp), %rcx
	movq	32(%rsp), %r8
	movq	40(%rsp), %r9
	movq	48(%rsp), %rax
	movq	56(%rsp), %r10
	movdqu	64(%rsp), %xmm0
	movdqu	80(%rsp), %xmm1
	movdqu	96(%rsp), %xmm2
	movdqu	112(%rsp), %xmm3
	movdqu	128(%rsp), %xmm4
	movdqu	144(%rsp), %xmm5
	movdqu	160(%rsp), %xmm6
	movdqu	176(%rsp), %xmm7
	leaq	200(%rsp), %rsp
	.cfi_adjust_cfa_offset -200
	je	prof_trace_call_real
	jmp	*%r11			/* not shadowed: the caller's return address stays */
	.cfi_endproc
	.size	prof_trace_entry, .-prof_trace_entry

	/* The slot holds prof_trace_exit: pop it and call the real function, whose return
	 * address then lands in the same slot with the same value; the stack the function
	 * sees is the one a jmp would give it (stack arguments where they were).
	 * An unwinder that meets prof_trace_exit as a return address (a traced frame whose
	 * real return address is still in the shadow stack) looks up the byte before it,
	 * the call's last: here the return address is unknown, so the walk ends there
	 * cleanly (_URC_END_OF_STACK; a thread's cancellation then runs its remaining
	 * cleanups and exits) instead of reading prof_trace_entry's frame rules. */
	.type	prof_trace_call_real, @function
prof_trace_call_real:
	.cfi_startproc
	.cfi_undefined rip
	leaq	8(%rsp), %rsp
	call	*%r11
	.cfi_endproc
	.size	prof_trace_call_real, .-prof_trace_call_real

	.globl	prof_trace_exit
	.hidden	prof_trace_exit
	.type	prof_trace_exit, @function
prof_trace_exit:
	/* The real function's ret landed here: rsp = 0 mod 16, the caller's own stack
	 * pointer. prof_trace_leave writes the original return address back into the slot
	 * just below it, so from then on this is an ordinary frame for unwinders (stacks
	 * captured in prof_trace_leave, debuggers): CFA = rsp at entry, RA at CFA - 8. */
	.cfi_startproc
	.cfi_def_cfa_offset 0
	subq	$48, %rsp
	.cfi_adjust_cfa_offset 48
	movq	%rax, 0(%rsp)
	movq	%rdx, 8(%rsp)
	movdqu	%xmm0, 16(%rsp)
	movdqu	%xmm1, 32(%rsp)
	leaq	48(%rsp), %rdi		/* the stack pointer the call returned with */
	call	prof_trace_leave	/* -> the original return address */
	movq	%rax, %r11
	movq	0(%rsp), %rax
	movq	8(%rsp), %rdx
	movdqu	16(%rsp), %xmm0
	movdqu	32(%rsp), %xmm1
	addq	$48, %rsp
	.cfi_adjust_cfa_offset -48
	/* back through the slot with a ret: it pairs with the caller's call on the
	 * return-stack predictor (a jmp would leave that entry to mispredict a later ret) */
	pushq	%r11
	.cfi_adjust_cfa_offset 8
	ret
	.cfi_endproc
	.size	prof_trace_exit, .-prof_trace_exit

	.section .note.GNU-stack,"",@progbits
