//go:build !noentrypoint

#include "textflag.h"
#include "startsig.h"

// The runtime's entry (_rt0_ppc64le_linux, then its static _main<>, which sets the TLS pointer
// and argc and argv) jumps here, to main, the symbol that on the other architectures it is
// written for is only for external linking: here it is the first one this package can take
// (doc.go). R1 (SP) is at argc; nothing may move it or touch the stack, nor R13, the TLS
// pointer. R3-R6 hold argc, argv and what a dynamic loader passed (a PIE build), which the
// syscall takes: they are kept in R17-R20 and put back. The syscall leaves R14-R31 alone
// (R14-R16 and R21-R22 are free here).
TEXT main(SB),DUPOK|NOSPLIT|NOFRAME,$0
	MOVD	R3, R17
	MOVD	R4, R18
	MOVD	R5, R19
	MOVD	R6, R20
	// catch's disposition (the kernel's vDSO trampoline returns from it: no SA_RESTORER).
	// The mask the process started with.
	MOVD	$0, R3			// SIG_BLOCK, with no set: the call only reads
	MOVD	$0, R4
	MOVD	$startsig_startMask(SB), R5
	MOVD	$8, R6
	SYSCALL	$174			// SYS_rt_sigprocmask
	MOVD	$1, R3
	MOVW	R3, startsig_armed(SB)
	MOVD	$·catch(SB), R3
	MOVD	R3, ·catchAct(SB)
	// First the stop signals, in catchOrder: each one's disposition read into acts, and catch
	// put in place of a SIG_DFL.
	MOVD	$·catchOrder(SB), R16
first:
	MOVBZ	(R16), R14
	CMP	R14, $0
	BEQ	rest
	MOVD	$startsig_acts(SB), R15
	SLD	$5, R14, R21
	ADD	R21, R15, R15		// &acts[sig]
	MOVD	R14, R3
	MOVD	$0, R4
	MOVD	R15, R5
	MOVD	$8, R6
	SYSCALL	$173			// SYS_rt_sigaction
	MOVD	(R15), R3
	CMP	R3, $0
	BNE	kept			// not SIG_DFL
	MOVD	R14, R3
	MOVD	$·catchAct(SB), R4
	MOVD	$0, R5
	MOVD	$8, R6
	SYSCALL	$173
kept:
	ADD	$1, R16
	BR	first
rest:
	MOVD	$1, R14			// signal number
	MOVD	$startsig_acts+32(SB), R15	// &acts[1]
loop:
	MOVD	$·catching(SB), R3
	ADD	R14, R3, R3
	MOVBZ	(R3), R3
	CMP	R3, $0
	BNE	next			// read above
	MOVD	R14, R3			// signum
	MOVD	$0, R4			// act: NULL, so the call only reads
	MOVD	R15, R5			// oldact
	MOVD	$8, R6			// sigsetsize
	SYSCALL	$173			// SYS_rt_sigaction
next:
	ADD	$32, R15
	ADD	$1, R14
	CMP	R14, $65
	BNE	loop
	MOVD	$1, R3
	MOVW	R3, startsig_ran(SB)
	// Hold the process on the CPU it runs on (startsig.go, "The start on one CPU"). A failed
	// call sets CR0's summary overflow bit, and R3 to the (positive) errno.
	MOVD	$0, R3			// pid 0: this thread
	MOVD	$512, R4		// len(origMask)
	MOVD	$startsig_origMask(SB), R5
	SYSCALL	$223			// SYS_sched_getaffinity
	BVC	2(PC)
	BR	done
	CMP	R3, $0
	BLE	done			// nothing written
	MOVD	R3, startsig_origLen(SB)
	MOVD	$startsig_cpu(SB), R3
	MOVD	$0, R4
	MOVD	$0, R5
	SYSCALL	$302			// SYS_getcpu
	BVC	2(PC)
	BR	done
	MOVWZ	startsig_cpu(SB), R14
	SRD	$12, R14, R15
	CMP	R15, $0
	BNE	done			// not in pinMask's 4096 bits
	ANDCC	$7, R14, R15		// the bit
	SRD	$3, R14, R14		// the byte
	MOVD	$1, R16
	SLD	R15, R16, R16
	MOVD	$startsig_pinMask(SB), R21
	ADD	R14, R21, R22
	MOVB	R16, 0(R22)
	MOVD	$0, R3
	MOVD	$512, R4
	MOVD	R21, R5
	SYSCALL	$222			// SYS_sched_setaffinity
	BVC	2(PC)
	BR	done
	MOVD	$1, R3
	MOVW	R3, startsig_pinned(SB)
done:
	MOVD	R17, R3
	MOVD	R18, R4
	MOVD	R19, R5
	MOVD	R20, R6
	MOVD	$runtime·rt0_go(SB), R12
	MOVD	R12, CTR
	BR	(CTR)

// catch(sig) is the handler of startsig.go's "A stop signal before drainit can take it", with
// the C calling convention (R3: the signal), from the kernel or from the runtime's sigfwd. It
// uses no stack, keeps what it needs across a syscall in R14-R16 (which Go code never expects
// kept across a call) and leaves R1, R2, R13 and R30 (g) alone.
TEXT ·catch(SB),NOSPLIT|NOFRAME,$0
	MOVWZ	startsig_armed(SB), R4
	CMP	R4, $0
	BEQ	back			// disarmed: the runtime's default follows
	MOVD	R3, R14
	CMPU	R14, $64
	BGT	back
	MOVD	$·query(SB), R15
	SLD	$5, R14, R16
	ADD	R16, R15, R15		// oldact: &query[sig]
	MOVD	$0, R4
	MOVD	R15, R5
	MOVD	$8, R6
	SYSCALL	$173			// SYS_rt_sigaction
	MOVD	(R15), R4
	MOVD	$·catch(SB), R5
	CMP	R4, R5
	BNE	refuse			// the runtime's handler is in place: it forwarded a signal it dies by
	MOVD	$startsig_caught(SB), R4
	ADD	R14, R4, R4
	MOVD	$1, R5
	MOVB	R5, (R4)
back:
	RET
refuse:
	MOVD	$·refusal(SB), R15
	SLD	$4, R14, R16
	ADD	R16, R15, R15
	MOVD	(R15), R4		// refusal[sig]
	MOVD	8(R15), R5
	MOVD	$2, R3			// stderr
	SYSCALL	$4			// SYS_write
	ADD	$128, R14, R3
	SYSCALL	$234			// SYS_exit_group
	RET
