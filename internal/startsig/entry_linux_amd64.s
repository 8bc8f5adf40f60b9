#include "textflag.h"

// The kernel starts the process here with SP at argc; nothing may move SP or touch the stack.
// SYSCALL clobbers AX, CX and R11 only; the runtime's entry reads nothing but the stack.
TEXT ·entry(SB),NOSPLIT|NOFRAME,$0
	MOVQ	$1, BX			// signal number
	LEAQ	·acts+32(SB), R12	// &acts[1]
loop:
	MOVQ	BX, DI			// signum
	XORQ	SI, SI			// act: NULL, so the call only reads
	MOVQ	R12, DX			// oldact
	MOVQ	$8, R10			// sigsetsize
	MOVQ	$13, AX			// SYS_rt_sigaction
	SYSCALL
	ADDQ	$32, R12
	INCQ	BX
	CMPQ	BX, $65
	JNE	loop
	MOVL	$1, ·ran(SB)
	JMP	_rt0_amd64_linux(SB)
