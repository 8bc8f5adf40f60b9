#include "textflag.h"

// The kernel starts the process here with R1 (SP) at argc; nothing may move it or touch the
// stack, nor R13, which the runtime's entry reads as the TLS pointer. A dynamic loader (a PIE
// build) passes argc, argv, envp and auxv in R3-R6, which the syscall takes: they are kept in
// R17-R20 and put back. The syscall leaves R14-R31 alone
// (R14-R16 and R21-R22 are free here).
TEXT ·entry(SB),NOSPLIT|NOFRAME,$0
	MOVD	R3, R17
	MOVD	R4, R18
	MOVD	R5, R19
	MOVD	R6, R20
	MOVD	$1, R14			// signal number
	MOVD	$·acts+32(SB), R15	// &acts[1]
loop:
	MOVD	R14, R3			// signum
	MOVD	$0, R4			// act: NULL, so the call only reads
	MOVD	R15, R5			// oldact
	MOVD	$8, R6			// sigsetsize
	SYSCALL	$173			// SYS_rt_sigaction
	ADD	$32, R15
	ADD	$1, R14
	CMP	R14, $65
	BNE	loop
	MOVD	$1, R3
	MOVW	R3, ·ran(SB)
	// Hold the process on the CPU it runs on (startsig.go, "The start on one CPU"). A failed
	// call sets CR0's summary overflow bit, and R3 to the (positive) errno.
	MOVD	$0, R3			// pid 0: this thread
	MOVD	$512, R4		// len(origMask)
	MOVD	$·origMask(SB), R5
	SYSCALL	$223			// SYS_sched_getaffinity
	BVC	2(PC)
	BR	done
	CMP	R3, $0
	BLE	done			// nothing written
	MOVD	R3, ·origLen(SB)
	MOVD	$·cpu(SB), R3
	MOVD	$0, R4
	MOVD	$0, R5
	SYSCALL	$302			// SYS_getcpu
	BVC	2(PC)
	BR	done
	MOVWZ	·cpu(SB), R14
	SRD	$12, R14, R15
	CMP	R15, $0
	BNE	done			// not in pinMask's 4096 bits
	ANDCC	$7, R14, R15		// the bit
	SRD	$3, R14, R14		// the byte
	MOVD	$1, R16
	SLD	R15, R16, R16
	MOVD	$·pinMask(SB), R21
	ADD	R14, R21, R22
	MOVB	R16, 0(R22)
	MOVD	$0, R3
	MOVD	$512, R4
	MOVD	R21, R5
	SYSCALL	$222			// SYS_sched_setaffinity
	BVC	2(PC)
	BR	done
	MOVD	$1, R3
	MOVW	R3, ·pinned(SB)
done:
	MOVD	R17, R3
	MOVD	R18, R4
	MOVD	R19, R5
	MOVD	R20, R6
	JMP	_rt0_ppc64le_linux(SB)
