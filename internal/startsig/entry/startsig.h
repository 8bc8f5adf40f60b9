// What the entry point fills in for package startsig's Go code to read, by the variables' full
// names (the assembler writes "." as U+00B7 and "/" as U+2215 in a symbol's package path).
#define startsig_acts github·com∕drainit∕drainit∕internal∕startsig·acts
#define startsig_armed github·com∕drainit∕drainit∕internal∕startsig·armed
#define startsig_caught github·com∕drainit∕drainit∕internal∕startsig·caught
#define startsig_cpu github·com∕drainit∕drainit∕internal∕startsig·cpu
#define startsig_origLen github·com∕drainit∕drainit∕internal∕startsig·origLen
#define startsig_origMask github·com∕drainit∕drainit∕internal∕startsig·origMask
#define startsig_pinMask github·com∕drainit∕drainit∕internal∕startsig·pinMask
#define startsig_pinned github·com∕drainit∕drainit∕internal∕startsig·pinned
#define startsig_ran github·com∕drainit∕drainit∕internal∕startsig·ran
#define startsig_startMask github·com∕drainit∕drainit∕internal∕startsig·startMask
