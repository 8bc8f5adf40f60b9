//go:build !noentrypoint

#include "textflag.h"
#include "startsig.h"

// The kernel starts the process here with R15 (SP) at argc; nothing may move it or touch the
// stack. The syscall clobbers R2 only; the runtime's entry reads nothing but the stack.
TEXT _rt0_s390x_linux(SB),DUPOK|NOSPLIT|NOFRAME,$0
	// catch's disposition (the kernel's vDSO trampoline returns from it: no SA_RESTORER).
	// The mask the process started with.
	MOVD	$0, R2			// SIG_BLOCK, with no set: the call only reads
	MOVD	$0, R3
	MOVD	$startsig_startMask(SB), R4
	MOVD	$8, R5
	MOVW	$175, R1		// SYS_rt_sigprocmask
	SYSCALL
	MOVD	$1, R2
	MOVW	R2, startsig_armed(SB)
	MOVD	$·catch(SB), R2
	MOVD	R2, ·catchAct(SB)
	// First the stop signals, in catchOrder: each one's disposition read into acts, and catch
	// put in place of a SIG_DFL.
	MOVD	$·catchOrder(SB), R10
first:
	MOVBZ	(R10), R8
	CMP	R8, $0
	BEQ	rest
	MOVD	$startsig_acts(SB), R9
	SLD	$5, R8, R6
	ADD	R6, R9			// &acts[sig]
	MOVD	R8, R2
	MOVD	$0, R3
	MOVD	R9, R4
	MOVD	$8, R5
	MOVW	$174, R1		// SYS_rt_sigaction
	SYSCALL
	MOVD	(R9), R2
	CMP	R2, $0
	BNE	kept			// not SIG_DFL
	MOVD	R8, R2
	MOVD	$·catchAct(SB), R3
	MOVD	$0, R4
	MOVD	$8, R5
	MOVW	$174, R1
	SYSCALL
kept:
	ADD	$1, R10
	BR	first
rest:
	MOVD	$1, R8			// signal number
	MOVD	$startsig_acts+32(SB), R9	// &acts[1]
loop:
	MOVD	$·catching(SB), R2
	ADD	R8, R2
	MOVBZ	(R2), R2
	CMP	R2, $0
	BNE	next			// read above
	MOVD	R8, R2			// signum
	MOVD	$0, R3			// act: NULL, so the call only reads
	MOVD	R9, R4			// oldact
	MOVD	$8, R5			// sigsetsize
	MOVW	$174, R1		// SYS_rt_sigaction
	SYSCALL
next:
	ADD	$32, R9
	ADD	$1, R8
	CMP	R8, $65
	BNE	loop
	MOVD	$1, R2
	MOVW	R2, startsig_ran(SB)
	// Hold the process on the CPU it runs on (startsig.go, "The start on one CPU").
	MOVD	$0, R2			// pid 0: this thread
	MOVD	$512, R3		// len(origMask)
	MOVD	$startsig_origMask(SB), R4
	MOVW	$240, R1		// SYS_sched_getaffinity
	SYSCALL
	CMP	R2, $0
	BLE	done			// an error, or nothing written
	MOVD	R2, startsig_origLen(SB)
	MOVD	$startsig_cpu(SB), R2
	MOVD	$0, R3
	MOVD	$0, R4
	MOVW	$311, R1		// SYS_getcpu
	SYSCALL
	CMP	R2, $0
	BNE	done
	MOVWZ	startsig_cpu(SB), R8
	SRD	$12, R8, R9
	CMP	R9, $0
	BNE	done			// not in pinMask's 4096 bits
	MOVD	R8, R9
	AND	$7, R9			// the bit
	SRD	$3, R8, R8
	XOR	$7, R8			// the byte: the mask is of 64-bit words, big-endian here
	MOVD	$1, R5
	SLD	R9, R5, R5
	MOVD	$startsig_pinMask(SB), R6
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
	MOVW	R2, startsig_pinned(SB)
done:
	MOVD	0(R15), R2		// argc
	ADD	$8, R15, R3		// argv
	BR	main(SB)

// catch(sig) is the handler of startsig.go's "A stop signal before drainit can take it", with
// the C calling convention (R2: the signal), from the kernel or from the runtime's sigfwd. It
// uses no stack and leaves R13 (g), R14 (the return) and R15 alone.
TEXT ·catch(SB),NOSPLIT|NOFRAME,$0
	MOVWZ	startsig_armed(SB), R3
	CMP	R3, $0
	BEQ	back			// disarmed: the runtime's default follows
	MOVD	R2, R8
	CMPU	R8, $64
	BGT	back
	MOVD	$·query(SB), R9
	SLD	$5, R8, R6
	ADD	R6, R9			// oldact: &query[sig]
	MOVD	$0, R3
	MOVD	R9, R4
	MOVD	$8, R5
	MOVW	$174, R1		// SYS_rt_sigaction
	SYSCALL
	MOVD	(R9), R3
	MOVD	$·catch(SB), R4
	CMP	R3, R4
	BNE	refuse			// the runtime's handler is in place: it forwarded a signal it dies by
	MOVD	$startsig_caught(SB), R3
	ADD	R8, R3
	MOVD	$1, R4
	MOVB	R4, (R3)
back:
	RET
refuse:
	MOVD	$·refusal(SB), R9
	SLD	$4, R8, R6
	ADD	R6, R9
	MOVD	(R9), R3		// refusal[sig]
	MOVD	8(R9), R4
	MOVD	$2, R2			// stderr
	MOVW	$4, R1			// SYS_write
	SYSCALL
	ADD	$128, R8, R2
	MOVW	$248, R1		// SYS_exit_group
	SYSCALL
	RET
