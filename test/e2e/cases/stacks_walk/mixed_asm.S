/* void *asm_call(void *(*fn)(void *), void *arg): begins `push %rbp` and then keeps a
 * pointer to its locals in %rbp, which is no frame pointer (its CFI says where its
 * caller's frame is; libunwind follows that). For stack_walk_mixed_code. */
	.text
	.globl asm_call
	.type asm_call, @function
asm_call:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	sub $48, %rsp
	.cfi_def_cfa_offset 64
	lea 16(%rsp), %rbp
	movq %rsi, (%rbp)
	movq $0, 8(%rbp)
	mov %rdi, %rax
	mov %rsi, %rdi
	call *%rax
	add $48, %rsp
	.cfi_def_cfa_offset 16
	pop %rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size asm_call, .-asm_call
	.section .note.GNU-stack, "", @progbits

/* void *asm_liar(void *(*fn)(void *), void *arg): begins with the frame-pointer prologue,
 * `push %rbp; mov %rsp,%rbp`, and then points %rbp at a made-up frame (a saved %rbp of
 * 0, a return address into itself) before it calls: a prologue that lies. Its CFI is
 * right, so libunwind is not fooled; a walk must not be either. */
	.text
	.globl asm_liar
	.type asm_liar, @function
asm_liar:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	sub $48, %rsp
	.cfi_def_cfa_offset 64
	lea 16(%rsp), %rbp
	lea asm_liar(%rip), %rax
	movq %rax, 8(%rbp)
	movq $0, (%rbp)
	mov %rdi, %rax
	mov %rsi, %rdi
	call *%rax
	add $48, %rsp
	.cfi_def_cfa_offset 16
	pop %rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size asm_liar, .-asm_liar
