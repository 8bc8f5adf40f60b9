package check

import (
	"syscall"
	"testing"
)

// killsPID1 reads kill's forms, direct and in a shell's script, as kill does.
func TestKillsPID1(t *testing.T) {
	for _, c := range []struct {
		argv []string
		sig  syscall.Signal // 0: no kill of PID 1
	}{
		{[]string{"kill", "1"}, syscall.SIGTERM},
		{[]string{"/bin/kill", "-9", "1"}, syscall.SIGKILL},
		{[]string{"kill", "-QUIT", "1"}, syscall.SIGQUIT},
		{[]string{"kill", "-SIGQUIT", "1"}, syscall.SIGQUIT},
		{[]string{"kill", "-hup", "1"}, syscall.SIGHUP},
		{[]string{"kill", "-s", "INT", "1"}, syscall.SIGINT},
		{[]string{"kill", "-n", "2", "1"}, syscall.SIGINT},
		{[]string{"kill", "--signal", "USR1", "1"}, syscall.Signal(10)}, // SIGUSR1, on Linux (drainit check reads signals as Linux does)
		{[]string{"kill", "--signal=TERM", "1"}, syscall.SIGTERM},
		{[]string{"kill", "-TERM", "--", "1"}, syscall.SIGTERM},
		{[]string{"kill", "7", "1"}, syscall.SIGTERM},
		{[]string{"busybox", "kill", "1"}, syscall.SIGTERM},
		{[]string{"sh", "-c", "sleep 10 && kill -TERM 1"}, syscall.SIGTERM},
		{[]string{"bash", "-ec", "exec kill -s QUIT 1"}, syscall.SIGQUIT},
		{[]string{"busybox", "sh", "-c", "kill -HUP 1"}, syscall.SIGHUP},
		{[]string{"sh", "-c", "kill -TERM $PID1"}, syscall.SIGTERM}, // PID1=1 in the container's env
		// Nothing sent to PID 1.
		{[]string{"kill", "-0", "1"}, 0},
		{[]string{"kill", "--", "-1"}, 0},
		{[]string{"kill", "-TERM", "12"}, 0},
		{[]string{"kill", "-l", "1"}, 0},
		{[]string{"kill", "-NOSUCH", "1"}, 0},
		{[]string{"kill", "-s"}, 0},
		{[]string{"sh", "-c", "echo kill 1"}, 0},
		{[]string{"sh", "/kill-1.sh"}, 0},
		{[]string{"pkill", "1"}, 0},
		{nil, 0},
	} {
		env := newEnvMap(&Container{Env: []EnvVar{{Name: "PID1", Value: "1", Known: true}}})
		sig, ok := killsPID1(c.argv, env)
		if ok != (c.sig != 0) || sig != c.sig {
			t.Errorf("killsPID1(%q) = %v, %v; want %v", c.argv, sig, ok, c.sig)
		}
	}
}
