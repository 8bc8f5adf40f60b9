#include "textflag.h"

// The kernel starts the process here with SP at argc; nothing may move SP or touch the stack.
// SYSCALL clobbers AX, CX and R11 only; the runtime's entry reads nothing but the stack
// (BX, CX, DX, SI, DI, R10, R12 are free).
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
	// Hold the process on the CPU it runs on (startsig.go, "The start on one CPU").
	XORQ	DI, DI			// pid 0: this thread
	MOVQ	$512, SI		// len(origMask)
	LEAQ	·origMask(SB), DX
	MOVQ	$204, AX		// SYS_sched_getaffinity
	SYSCALL
	CMPQ	AX, $0
	JLE	done			// an error, or nothing written
	MOVQ	AX, ·origLen(SB)
	LEAQ	·cpu(SB), DI
	XORQ	SI, SI
	XORQ	DX, DX
	MOVQ	$309, AX		// SYS_getcpu
	SYSCALL
	CMPQ	AX, $0
	JNE	done
	MOVL	·cpu(SB), BX
	MOVL	BX, CX
	SHRL	$12, CX
	JNE	done			// not in pinMask's 4096 bits
	MOVL	BX, CX
	ANDL	$7, CX			// the bit
	SHRL	$3, BX			// the byte
	MOVL	$1, AX
	SHLL	CX, AX
	LEAQ	·pinMask(SB), DX
	MOVB	AL, (DX)(BX*1)
	XORQ	DI, DI
	MOVQ	$512, SI
	MOVQ	$203, AX		// SYS_sched_setaffinity
	SYSCALL
	CMPQ	AX, $0
	JNE	done
	MOVL	$1, ·pinned(SB)
done:
	JMP	_rt0_amd64_linux(SB)
