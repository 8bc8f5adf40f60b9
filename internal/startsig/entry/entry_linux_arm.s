//go:build !noentrypoint

#include "textflag.h"
#include "startsig.h"

// The kernel starts the process here with R13 (SP) at argc; nothing may move it or touch the
// stack. SWI clobbers R0 only; the runtime's entry reads nothing but the stack. (SWI $0 is the
// EABI call, as the runtime's own; on an OABI kernel it raises SIGILL, where the runtime would.)
TEXT _rt0_arm_linux(SB),DUPOK|NOSPLIT|NOFRAME,$0
	// catch's disposition (the kernel's sigreturn page returns from it: no SA_RESTORER).
	// The mask the process started with.
	MOVW	$0, R0			// SIG_BLOCK, with no set: the call only reads
	MOVW	$0, R1
	MOVW	$startsig_startMask(SB), R2
	MOVW	$8, R3
	MOVW	$175, R7		// SYS_rt_sigprocmask
	SWI	$0
	MOVW	$1, R0
	MOVW	R0, startsig_armed(SB)
	MOVW	$·catch(SB), R0
	MOVW	R0, ·catchAct(SB)
	// First the stop signals, in catchOrder: each one's disposition read into acts, and catch
	// put in place of a SIG_DFL.
	MOVW	$·catchOrder(SB), R6
first:
	MOVBU	(R6), R8
	CMP	$0, R8
	BEQ	rest
	MOVW	$startsig_acts(SB), R9
	ADD	R8<<5, R9, R9		// &acts[sig]
	MOVW	R8, R0
	MOVW	$0, R1
	MOVW	R9, R2
	MOVW	$8, R3
	MOVW	$174, R7		// SYS_rt_sigaction
	SWI	$0
	MOVW	(R9), R0
	CMP	$0, R0
	BNE	kept			// not SIG_DFL
	MOVW	R8, R0
	MOVW	$·catchAct(SB), R1
	MOVW	$0, R2
	MOVW	$8, R3
	MOVW	$174, R7
	SWI	$0
kept:
	ADD	$1, R6
	B	first
rest:
	MOVW	$1, R8			// signal number
	MOVW	$startsig_acts+32(SB), R9	// &acts[1]
loop:
	MOVW	$·catching(SB), R0
	ADD	R8, R0, R0
	MOVBU	(R0), R0
	CMP	$0, R0
	BNE	next			// read above
	MOVW	R8, R0			// signum
	MOVW	$0, R1			// act: NULL, so the call only reads
	MOVW	R9, R2			// oldact
	MOVW	$8, R3			// sigsetsize
	MOVW	$174, R7		// SYS_rt_sigaction
	SWI	$0
next:
	ADD	$32, R9
	ADD	$1, R8
	CMP	$65, R8
	BNE	loop
	MOVW	$1, R0
	MOVW	R0, startsig_ran(SB)
	// Hold the process on the CPU it runs on (startsig.go, "The start on one CPU"). R10 (g)
	// and R11 (the assembler's temporary) are left alone.
	MOVW	$0, R0			// pid 0: this thread
	MOVW	$512, R1		// len(origMask)
	MOVW	$startsig_origMask(SB), R2
	MOVW	$242, R7		// SYS_sched_getaffinity
	SWI	$0
	CMP	$0, R0
	BLE	done			// an error, or nothing written
	MOVW	R0, startsig_origLen(SB)
	MOVW	$startsig_cpu(SB), R0
	MOVW	$0, R1
	MOVW	$0, R2
	MOVW	$345, R7		// SYS_getcpu
	SWI	$0
	CMP	$0, R0
	BNE	done
	MOVW	startsig_cpu(SB), R8
	MOVW	R8>>12, R9
	CMP	$0, R9
	BNE	done			// not in pinMask's 4096 bits
	AND	$7, R8, R9		// the bit
	MOVW	R8>>3, R8		// the byte
	MOVW	$1, R4
	MOVW	R4<<R9, R4
	MOVW	$startsig_pinMask(SB), R5
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
	MOVW	R0, startsig_pinned(SB)
done:
	MOVW	(R13), R0		// argc
	MOVW	$4(R13), R1		// argv
	MOVW	$_rt0_arm_linux1(SB), R4
	B	(R4)

// catch(sig) is the handler of startsig.go's "A stop signal before drainit can take it", with
// the C calling convention (R0: the signal), from the kernel or from the runtime's sigfwd. It
// uses no stack and leaves R4 (sigfwd's saved SP), R10 (g), R13 and R14 alone.
TEXT ·catch(SB),NOSPLIT|NOFRAME,$0
	MOVW	startsig_armed(SB), R1
	CMP	$0, R1
	BEQ	back			// disarmed: the runtime's default follows
	MOVW	R0, R5
	CMP	$64, R5
	BHI	back
	MOVW	$·query(SB), R6
	ADD	R5<<5, R6, R6		// oldact: &query[sig]
	MOVW	$0, R1
	MOVW	R6, R2
	MOVW	$8, R3
	MOVW	$174, R7		// SYS_rt_sigaction
	SWI	$0
	MOVW	(R6), R8
	MOVW	$·catch(SB), R9
	CMP	R8, R9
	BNE	refuse			// the runtime's handler is in place: it forwarded a signal it dies by
	MOVW	$startsig_caught(SB), R8
	ADD	R5, R8, R8
	MOVW	$1, R9
	MOVB	R9, (R8)
back:
	RET
refuse:
	MOVW	$·refusal(SB), R8
	ADD	R5<<3, R8, R8		// a string is 8 bytes here
	MOVW	(R8), R1		// refusal[sig]
	MOVW	4(R8), R2
	MOVW	$2, R0			// stderr
	MOVW	$4, R7			// SYS_write
	SWI	$0
	ADD	$128, R5, R0
	MOVW	$248, R7		// SYS_exit_group
	SWI	$0
	RET
