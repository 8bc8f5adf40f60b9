//go:build !noentrypoint

#include "textflag.h"
#include "startsig.h"

// The kernel starts the process here with SP at argc; nothing may move SP or touch the stack.
// SYSCALL clobbers AX, CX and R11 only; the runtime's entry reads nothing but the stack
// (BX, CX, DX, SI, DI, R10, R12 are free).
TEXT _rt0_amd64_linux(SB),DUPOK|NOSPLIT|NOFRAME,$0
	// catch's disposition: x86-64 needs a restorer of its own (SA_RESTORER).
	// The mask the process started with.
	XORQ	DI, DI			// SIG_BLOCK, with no set: the call only reads
	XORQ	SI, SI
	LEAQ	startsig_startMask(SB), DX
	MOVQ	$8, R10
	MOVQ	$14, AX			// SYS_rt_sigprocmask
	SYSCALL
	MOVL	$1, startsig_armed(SB)
	LEAQ	·catch(SB), AX
	MOVQ	AX, ·catchAct(SB)
	MOVQ	$0x04000000, ·catchAct+8(SB)
	LEAQ	·restore(SB), AX
	MOVQ	AX, ·catchAct+16(SB)
	// First the stop signals, in catchOrder: each one's disposition read into acts, and catch
	// put in place of a SIG_DFL.
	LEAQ	·catchOrder(SB), R13
first:
	MOVBQZX	(R13), BX
	TESTQ	BX, BX
	JZ	rest
	MOVQ	BX, R12
	SHLQ	$5, R12
	LEAQ	startsig_acts(SB), AX
	ADDQ	AX, R12			// &acts[sig]
	MOVQ	BX, DI
	XORQ	SI, SI
	MOVQ	R12, DX
	MOVQ	$8, R10
	MOVQ	$13, AX			// SYS_rt_sigaction
	SYSCALL
	CMPQ	(R12), $0		// SIG_DFL
	JNE	kept
	MOVQ	BX, DI
	LEAQ	·catchAct(SB), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	MOVQ	$13, AX
	SYSCALL
kept:
	INCQ	R13
	JMP	first
rest:
	MOVQ	$1, BX			// signal number
	LEAQ	startsig_acts+32(SB), R12	// &acts[1]
loop:
	LEAQ	·catching(SB), AX
	MOVBLZX	(AX)(BX*1), AX
	TESTL	AX, AX
	JNZ	next			// read above
	MOVQ	BX, DI			// signum
	XORQ	SI, SI			// act: NULL, so the call only reads
	MOVQ	R12, DX			// oldact
	MOVQ	$8, R10			// sigsetsize
	MOVQ	$13, AX			// SYS_rt_sigaction
	SYSCALL
next:
	ADDQ	$32, R12
	INCQ	BX
	CMPQ	BX, $65
	JNE	loop
	MOVL	$1, startsig_ran(SB)
	// Hold the process on the CPU it runs on (startsig.go, "The start on one CPU").
	XORQ	DI, DI			// pid 0: this thread
	MOVQ	$512, SI		// len(origMask)
	LEAQ	startsig_origMask(SB), DX
	MOVQ	$204, AX		// SYS_sched_getaffinity
	SYSCALL
	CMPQ	AX, $0
	JLE	done			// an error, or nothing written
	MOVQ	AX, startsig_origLen(SB)
	LEAQ	startsig_cpu(SB), DI
	XORQ	SI, SI
	XORQ	DX, DX
	MOVQ	$309, AX		// SYS_getcpu
	SYSCALL
	CMPQ	AX, $0
	JNE	done
	MOVL	startsig_cpu(SB), BX
	MOVL	BX, CX
	SHRL	$12, CX
	JNE	done			// not in pinMask's 4096 bits
	MOVL	BX, CX
	ANDL	$7, CX			// the bit
	SHRL	$3, BX			// the byte
	MOVL	$1, AX
	SHLL	CX, AX
	LEAQ	startsig_pinMask(SB), DX
	MOVB	AL, (DX)(BX*1)
	XORQ	DI, DI
	MOVQ	$512, SI
	MOVQ	$203, AX		// SYS_sched_setaffinity
	SYSCALL
	CMPQ	AX, $0
	JNE	done
	MOVL	$1, startsig_pinned(SB)
done:
	JMP	_rt0_amd64(SB)

// catch(sig) is the handler of startsig.go's "A stop signal before drainit can take it", with
// the C calling convention (DI: the signal), from the kernel or from the runtime's sigfwd. It
// uses no stack and only registers a C callee may clobber.
TEXT ·catch(SB),NOSPLIT|NOFRAME,$0
	MOVL	startsig_armed(SB), AX
	TESTL	AX, AX
	JZ	back			// disarmed: the runtime's default follows
	MOVQ	DI, R8
	CMPQ	R8, $64
	JHI	back
	MOVQ	R8, DX
	SHLQ	$5, DX
	LEAQ	·query(SB), AX
	ADDQ	AX, DX			// oldact: &query[sig]
	XORQ	SI, SI
	MOVQ	$8, R10
	MOVQ	$13, AX			// SYS_rt_sigaction
	SYSCALL
	LEAQ	·catch(SB), AX
	CMPQ	AX, (DX)
	JNE	refuse			// the runtime's handler is in place: it forwarded a signal it dies by
	LEAQ	startsig_caught(SB), AX
	MOVB	$1, (AX)(R8*1)
back:
	RET
refuse:
	MOVQ	R8, CX
	SHLQ	$4, CX
	LEAQ	·refusal(SB), AX
	MOVQ	8(AX)(CX*1), DX		// len(refusal[sig])
	MOVQ	(AX)(CX*1), SI
	MOVQ	$2, DI			// stderr
	MOVQ	$1, AX			// SYS_write
	SYSCALL
	LEAQ	128(R8), DI
	MOVQ	$231, AX		// SYS_exit_group
	SYSCALL
	RET

// restore is catch's return to the kernel, which x86-64 asks a handler to bring (SA_RESTORER).
TEXT ·restore(SB),NOSPLIT|NOFRAME,$0
	MOVQ	$15, AX			// SYS_rt_sigreturn
	SYSCALL
	RET
