#include "textflag.h"

// The kernel starts the process here with X2 (SP) at argc; nothing may move it or touch the
// stack. ECALL clobbers A0 only; the runtime's entry reads nothing but the stack.
TEXT ·entry(SB),NOSPLIT|NOFRAME,$0
	MOV	$1, X18			// signal number
	MOV	$·acts+32(SB), X19	// &acts[1]
	MOV	$65, X20
loop:
	MOV	X18, A0			// signum
	MOV	ZERO, A1		// act: NULL, so the call only reads
	MOV	X19, A2			// oldact
	MOV	$8, A3			// sigsetsize
	MOV	$134, A7		// SYS_rt_sigaction
	ECALL
	ADD	$32, X19
	ADD	$1, X18
	BNE	X18, X20, loop
	MOV	$1, A0
	MOVW	A0, ·ran(SB)
	// Hold the process on the CPU it runs on (startsig.go, "The start on one CPU").
	MOV	ZERO, A0		// pid 0: this thread
	MOV	$512, A1		// len(origMask)
	MOV	$·origMask(SB), A2
	MOV	$123, A7		// SYS_sched_getaffinity
	ECALL
	BLEZ	A0, done		// an error, or nothing written
	MOV	A0, ·origLen(SB)
	MOV	$·cpu(SB), A0
	MOV	ZERO, A1
	MOV	ZERO, A2
	MOV	$168, A7		// SYS_getcpu
	ECALL
	BNEZ	A0, done
	MOVWU	·cpu(SB), X21
	SRL	$12, X21, X22
	BNEZ	X22, done		// not in pinMask's 4096 bits
	AND	$7, X21, X22		// the bit
	SRL	$3, X21, X21		// the byte
	MOV	$1, X23
	SLL	X22, X23, X23
	MOV	$·pinMask(SB), X22
	ADD	X21, X22, X21
	MOVB	X23, (X21)
	MOV	ZERO, A0
	MOV	$512, A1
	MOV	X22, A2
	MOV	$122, A7		// SYS_sched_setaffinity
	ECALL
	BNEZ	A0, done
	MOV	$1, A0
	MOVW	A0, ·pinned(SB)
done:
	JMP	_rt0_riscv64_linux(SB)
