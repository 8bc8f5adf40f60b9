#include "textflag.h"

// The kernel starts the process here with R1 (SP) at argc; nothing may move it or touch the
// stack, nor R13, which the runtime's entry reads as the TLS pointer. A dynamic loader (a PIE
// build) passes argc, argv, envp and auxv in R3-R6, which the syscall takes: they are kept in
// R17-R20 and put back. The syscall leaves R14-R31 alone.
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
	MOVD	R17, R3
	MOVD	R18, R4
	MOVD	R19, R5
	MOVD	R20, R6
	JMP	_rt0_ppc64le_linux(SB)
