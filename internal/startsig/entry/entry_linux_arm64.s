//go:build !noentrypoint

#include "textflag.h"
#include "startsig.h"

// The kernel starts the process here with RSP at argc; nothing may move RSP or touch the stack.
// SVC clobbers R0 only; the runtime's entry reads nothing but the stack.
TEXT _rt0_arm64_linux(SB),DUPOK|NOSPLIT|NOFRAME,$0
	// catch's disposition (the kernel's trampoline returns from it: no SA_RESTORER).
	// The mask the process started with.
	MOVD	$0, R0			// SIG_BLOCK, with no set: the call only reads
	MOVD	$0, R1
	MOVD	$startsig_startMask(SB), R2
	MOVD	$8, R3
	MOVD	$135, R8		// SYS_rt_sigprocmask
	SVC
	MOVD	$1, R0
	MOVW	R0, startsig_armed(SB)
	MOVD	$·catch(SB), R0
	MOVD	R0, ·catchAct(SB)
	// First the stop signals, in catchOrder: each one's disposition read into acts, and catch
	// put in place of a SIG_DFL.
	MOVD	$·catchOrder(SB), R21
first:
	MOVBU	(R21), R19
	CBZ	R19, rest
	MOVD	$startsig_acts(SB), R20
	ADD	R19<<5, R20, R20	// &acts[sig]
	MOVD	R19, R0
	MOVD	$0, R1
	MOVD	R20, R2
	MOVD	$8, R3
	MOVD	$134, R8		// SYS_rt_sigaction
	SVC
	MOVD	(R20), R0
	CBNZ	R0, kept		// not SIG_DFL
	MOVD	R19, R0
	MOVD	$·catchAct(SB), R1
	MOVD	$0, R2
	MOVD	$8, R3
	MOVD	$134, R8
	SVC
kept:
	ADD	$1, R21
	B	first
rest:
	MOVD	$1, R19			// signal number
	MOVD	$startsig_acts+32(SB), R20	// &acts[1]
loop:
	MOVD	$·catching(SB), R0
	MOVBU	(R0)(R19), R0
	CBNZ	R0, next		// read above
	MOVD	R19, R0			// signum
	MOVD	$0, R1			// act: NULL, so the call only reads
	MOVD	R20, R2			// oldact
	MOVD	$8, R3			// sigsetsize
	MOVD	$134, R8		// SYS_rt_sigaction
	SVC
next:
	ADD	$32, R20
	ADD	$1, R19
	CMP	$65, R19
	BNE	loop
	MOVD	$1, R0
	MOVW	R0, startsig_ran(SB)
	// Hold the process on the CPU it runs on (startsig.go, "The start on one CPU").
	MOVD	$0, R0			// pid 0: this thread
	MOVD	$512, R1		// len(origMask)
	MOVD	$startsig_origMask(SB), R2
	MOVD	$123, R8		// SYS_sched_getaffinity
	SVC
	CMP	$0, R0
	BLE	done			// an error, or nothing written
	MOVD	R0, startsig_origLen(SB)
	MOVD	$startsig_cpu(SB), R0
	MOVD	$0, R1
	MOVD	$0, R2
	MOVD	$168, R8		// SYS_getcpu
	SVC
	CBNZ	R0, done
	MOVWU	startsig_cpu(SB), R19
	LSR	$12, R19, R20
	CBNZ	R20, done		// not in pinMask's 4096 bits
	AND	$7, R19, R20		// the bit
	LSR	$3, R19, R19		// the byte
	MOVD	$1, R21
	LSL	R20, R21, R21
	MOVD	$startsig_pinMask(SB), R22
	MOVB	R21, (R22)(R19)
	MOVD	$0, R0
	MOVD	$512, R1
	MOVD	R22, R2
	MOVD	$122, R8		// SYS_sched_setaffinity
	SVC
	CBNZ	R0, done
	MOVD	$1, R0
	MOVW	R0, startsig_pinned(SB)
done:
	JMP	_rt0_arm64(SB)

// catch(sig) is the handler of startsig.go's "A stop signal before drainit can take it", with
// the C calling convention (R0: the signal), from the kernel or from the runtime's sigfwd. It
// uses no stack and leaves R19-R30 (g among them) alone.
TEXT ·catch(SB),NOSPLIT|NOFRAME,$0
	MOVWU	startsig_armed(SB), R9
	CBZ	R9, back		// disarmed: the runtime's default follows
	MOVD	R0, R10
	CMP	$64, R10
	BHI	back
	MOVD	$·query(SB), R11
	ADD	R10<<5, R11, R11	// oldact: &query[sig]
	MOVD	$0, R1
	MOVD	R11, R2
	MOVD	$8, R3
	MOVD	$134, R8		// SYS_rt_sigaction
	SVC
	MOVD	(R11), R12
	MOVD	$·catch(SB), R13
	CMP	R12, R13
	BNE	refuse			// the runtime's handler is in place: it forwarded a signal it dies by
	MOVD	$startsig_caught(SB), R12
	MOVD	$1, R13
	MOVB	R13, (R12)(R10)
back:
	RET
refuse:
	MOVD	$·refusal(SB), R12
	ADD	R10<<4, R12, R12
	MOVD	(R12), R1		// refusal[sig]
	MOVD	8(R12), R2
	MOVD	$2, R0			// stderr
	MOVD	$64, R8			// SYS_write
	SVC
	ADD	$128, R10, R0
	MOVD	$94, R8			// SYS_exit_group
	SVC
	RET
