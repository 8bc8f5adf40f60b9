#include "textflag.h"

// The kernel starts the process here with R15 (SP) at argc; nothing may move it or touch the
// stack. The syscall clobbers R2 only; the runtime's entry reads nothing but the stack.
TEXT ·entry(SB),NOSPLIT|NOFRAME,$0
	MOVD	$1, R8			// signal number
	MOVD	$·acts+32(SB), R9	// &acts[1]
loop:
	MOVD	R8, R2			// signum
	MOVD	$0, R3			// act: NULL, so the call only reads
	MOVD	R9, R4			// oldact
	MOVD	$8, R5			// sigsetsize
	MOVW	$174, R1		// SYS_rt_sigaction
	SYSCALL
	ADD	$32, R9
	ADD	$1, R8
	CMP	R8, $65
	BNE	loop
	MOVD	$1, R2
	MOVW	R2, ·ran(SB)
	// Hold the process on the CPU it runs on (startsig.go, "The start on one CPU").
	MOVD	$0, R2			// pid 0: this thread
	MOVD	$512, R3		// len(origMask)
	MOVD	$·origMask(SB), R4
	MOVW	$240, R1		// SYS_sched_getaffinity
	SYSCALL
	CMP	R2, $0
	BLE	done			// an error, or nothing written
	MOVD	R2, ·origLen(SB)
	MOVD	$·cpu(SB), R2
	MOVD	$0, R3
	MOVD	$0, R4
	MOVW	$311, R1		// SYS_getcpu
	SYSCALL
	CMP	R2, $0
	BNE	done
	MOVWZ	·cpu(SB), R8
	SRD	$12, R8, R9
	CMP	R9, $0
	BNE	done			// not in pinMask's 4096 bits
	MOVD	R8, R9
	AND	$7, R9			// the bit
	SRD	$3, R8, R8
	XOR	$7, R8			// the byte: the mask is of 64-bit words, big-endian here
	MOVD	$1, R5
	SLD	R9, R5, R5
	MOVD	$·pinMask(SB), R6
	ADD	R8, R6, R7
	MOVB	R5, 0(R7)
	MOVD	$0, R2
	MOVD	$512, R3
	MOVD	R6, R4
	MOVW	$239, R1		// SYS_sched_setaffinity
	SYSCALL
	CMP	R2, $0
	BNE	done
	MOVD	$1, R2
	MOVW	R2, ·pinned(SB)
done:
	BR	_rt0_s390x_linux(SB)
