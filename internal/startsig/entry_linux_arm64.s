#include "textflag.h"

// The kernel starts the process here with RSP at argc; nothing may move RSP or touch the stack.
// SVC clobbers R0 only; the runtime's entry reads nothing but the stack.
TEXT ·entry(SB),NOSPLIT|NOFRAME,$0
	MOVD	$1, R19			// signal number
	MOVD	$·acts+32(SB), R20	// &acts[1]
loop:
	MOVD	R19, R0			// signum
	MOVD	$0, R1			// act: NULL, so the call only reads
	MOVD	R20, R2			// oldact
	MOVD	$8, R3			// sigsetsize
	MOVD	$134, R8		// SYS_rt_sigaction
	SVC
	ADD	$32, R20
	ADD	$1, R19
	CMP	$65, R19
	BNE	loop
	MOVD	$1, R0
	MOVW	R0, ·ran(SB)
	// Hold the process on the CPU it runs on (startsig.go, "The start on one CPU").
	MOVD	$0, R0			// pid 0: this thread
	MOVD	$512, R1		// len(origMask)
	MOVD	$·origMask(SB), R2
	MOVD	$123, R8		// SYS_sched_getaffinity
	SVC
	CMP	$0, R0
	BLE	done			// an error, or nothing written
	MOVD	R0, ·origLen(SB)
	MOVD	$·cpu(SB), R0
	MOVD	$0, R1
	MOVD	$0, R2
	MOVD	$168, R8		// SYS_getcpu
	SVC
	CBNZ	R0, done
	MOVWU	·cpu(SB), R19
	LSR	$12, R19, R20
	CBNZ	R20, done		// not in pinMask's 4096 bits
	AND	$7, R19, R20		// the bit
	LSR	$3, R19, R19		// the byte
	MOVD	$1, R21
	LSL	R20, R21, R21
	MOVD	$·pinMask(SB), R22
	MOVB	R21, (R22)(R19)
	MOVD	$0, R0
	MOVD	$512, R1
	MOVD	R22, R2
	MOVD	$122, R8		// SYS_sched_setaffinity
	SVC
	CBNZ	R0, done
	MOVD	$1, R0
	MOVW	R0, ·pinned(SB)
done:
	JMP	_rt0_arm64_linux(SB)
