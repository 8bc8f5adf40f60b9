#include "textflag.h"

// The kernel starts the process here with R13 (SP) at argc; nothing may move it or touch the
// stack. SWI clobbers R0 only; the runtime's entry reads nothing but the stack. (SWI $0 is the
// EABI call, as the runtime's own; on an OABI kernel it raises SIGILL, where the runtime would.)
TEXT ·entry(SB),NOSPLIT|NOFRAME,$0
	MOVW	$1, R8			// signal number
	MOVW	$·acts+32(SB), R9	// &acts[1]
loop:
	MOVW	R8, R0			// signum
	MOVW	$0, R1			// act: NULL, so the call only reads
	MOVW	R9, R2			// oldact
	MOVW	$8, R3			// sigsetsize
	MOVW	$174, R7		// SYS_rt_sigaction
	SWI	$0
	ADD	$32, R9
	ADD	$1, R8
	CMP	$65, R8
	BNE	loop
	MOVW	$1, R0
	MOVW	R0, ·ran(SB)
	// Hold the process on the CPU it runs on (startsig.go, "The start on one CPU"). R10 (g)
	// and R11 (the assembler's temporary) are left alone.
	MOVW	$0, R0			// pid 0: this thread
	MOVW	$512, R1		// len(origMask)
	MOVW	$·origMask(SB), R2
	MOVW	$242, R7		// SYS_sched_getaffinity
	SWI	$0
	CMP	$0, R0
	BLE	done			// an error, or nothing written
	MOVW	R0, ·origLen(SB)
	MOVW	$·cpu(SB), R0
	MOVW	$0, R1
	MOVW	$0, R2
	MOVW	$345, R7		// SYS_getcpu
	SWI	$0
	CMP	$0, R0
	BNE	done
	MOVW	·cpu(SB), R8
	MOVW	R8>>12, R9
	CMP	$0, R9
	BNE	done			// not in pinMask's 4096 bits
	AND	$7, R8, R9		// the bit
	MOVW	R8>>3, R8		// the byte
	MOVW	$1, R4
	MOVW	R4<<R9, R4
	MOVW	$·pinMask(SB), R5
	ADD	R8, R5, R6
	MOVB	R4, (R6)
	MOVW	$0, R0
	MOVW	$512, R1
	MOVW	R5, R2
	MOVW	$241, R7		// SYS_sched_setaffinity
	SWI	$0
	CMP	$0, R0
	BNE	done
	MOVW	$1, R0
	MOVW	R0, ·pinned(SB)
done:
	B	_rt0_arm_linux(SB)
