//go:build !noentrypoint

#include "textflag.h"
#include "startsig.h"

// The kernel starts the process here with X2 (SP) at argc; nothing may move it or touch the
// stack. ECALL clobbers A0 only; the runtime's entry reads nothing but the stack.
TEXT _rt0_riscv64_linux(SB),DUPOK|NOSPLIT|NOFRAME,$0
	// catch's disposition (the kernel's vDSO trampoline returns from it).
	// The mask the process started with.
	MOV	ZERO, A0		// SIG_BLOCK, with no set: the call only reads
	MOV	ZERO, A1
	MOV	$startsig_startMask(SB), A2
	MOV	$8, A3
	MOV	$135, A7		// SYS_rt_sigprocmask
	ECALL
	MOV	$1, A0
	MOVW	A0, startsig_armed(SB)
	MOV	$·catch(SB), A0
	MOV	A0, ·catchAct(SB)
	// First the stop signals, in catchOrder: each one's disposition read into acts, and catch
	// put in place of a SIG_DFL.
	MOV	$·catchOrder(SB), X21
first:
	MOVBU	(X21), X18
	BEQZ	X18, rest
	MOV	$startsig_acts(SB), X19
	SLL	$5, X18, X22
	ADD	X22, X19, X19		// &acts[sig]
	MOV	X18, A0
	MOV	ZERO, A1
	MOV	X19, A2
	MOV	$8, A3
	MOV	$134, A7		// SYS_rt_sigaction
	ECALL
	MOV	(X19), A0
	BNEZ	A0, kept		// not SIG_DFL
	MOV	X18, A0
	MOV	$·catchAct(SB), A1
	MOV	ZERO, A2
	MOV	$8, A3
	MOV	$134, A7
	ECALL
kept:
	ADD	$1, X21
	JMP	first
rest:
	MOV	$1, X18			// signal number
	MOV	$startsig_acts+32(SB), X19	// &acts[1]
	MOV	$65, X20
loop:
	MOV	$·catching(SB), A0
	ADD	X18, A0, A0
	MOVBU	(A0), A0
	BNEZ	A0, next		// read above
	MOV	X18, A0			// signum
	MOV	ZERO, A1		// act: NULL, so the call only reads
	MOV	X19, A2			// oldact
	MOV	$8, A3			// sigsetsize
	MOV	$134, A7		// SYS_rt_sigaction
	ECALL
next:
	ADD	$32, X19
	ADD	$1, X18
	BNE	X18, X20, loop
	MOV	$1, A0
	MOVW	A0, startsig_ran(SB)
	// Hold the process on the CPU it runs on (startsig.go, "The start on one CPU").
	MOV	ZERO, A0		// pid 0: this thread
	MOV	$512, A1		// len(origMask)
	MOV	$startsig_origMask(SB), A2
	MOV	$123, A7		// SYS_sched_getaffinity
	ECALL
	BLEZ	A0, done		// an error, or nothing written
	MOV	A0, startsig_origLen(SB)
	MOV	$startsig_cpu(SB), A0
	MOV	ZERO, A1
	MOV	ZERO, A2
	MOV	$168, A7		// SYS_getcpu
	ECALL
	BNEZ	A0, done
	MOVWU	startsig_cpu(SB), X21
	SRL	$12, X21, X22
	BNEZ	X22, done		// not in pinMask's 4096 bits
	AND	$7, X21, X22		// the bit
	SRL	$3, X21, X21		// the byte
	MOV	$1, X23
	SLL	X22, X23, X23
	MOV	$startsig_pinMask(SB), X22
	ADD	X21, X22, X21
	MOVB	X23, (X21)
	MOV	ZERO, A0
	MOV	$512, A1
	MOV	X22, A2
	MOV	$122, A7		// SYS_sched_setaffinity
	ECALL
	BNEZ	A0, done
	MOV	$1, A0
	MOVW	A0, startsig_pinned(SB)
done:
	MOV	0(X2), A0		// argc
	ADD	$8, X2, A1		// argv
	JMP	main(SB)

// catch(sig) is the handler of startsig.go's "A stop signal before drainit can take it", with
// the C calling convention (A0: the signal), from the kernel or from the runtime's sigfwd. It
// uses no stack and only A0-A7 and T0-T2, which Go code never expects kept across a call.
TEXT ·catch(SB),NOSPLIT|NOFRAME,$0
	MOVWU	startsig_armed(SB), T0
	BEQZ	T0, back		// disarmed: the runtime's default follows
	MOV	A0, T0
	MOV	$64, T1
	BGTU	T0, T1, back
	MOV	$·query(SB), T1
	SLL	$5, T0, T2
	ADD	T2, T1, T1		// oldact: &query[sig]
	MOV	ZERO, A1
	MOV	T1, A2
	MOV	$8, A3
	MOV	$134, A7		// SYS_rt_sigaction
	ECALL
	MOV	(T1), T2
	MOV	$·catch(SB), A1
	BNE	T2, A1, refuse		// the runtime's handler is in place: it forwarded a signal it dies by
	MOV	$startsig_caught(SB), T1
	ADD	T0, T1, T1
	MOV	$1, T2
	MOVB	T2, (T1)
back:
	RET
refuse:
	MOV	$·refusal(SB), T1
	SLL	$4, T0, T2
	ADD	T2, T1, T1
	MOV	(T1), A1		// refusal[sig]
	MOV	8(T1), A2
	MOV	$2, A0			// stderr
	MOV	$64, A7			// SYS_write
	ECALL
	ADD	$128, T0, A0
	MOV	$94, A7			// SYS_exit_group
	ECALL
	RET
