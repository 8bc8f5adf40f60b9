//go:build linux

package hooks

import (
	"sync"

	"golang.org/x/sys/unix"
)

// Children starts the processes of exec hooks and routes their exit statuses, which the
// program's one reaper collects, back to the hooks waiting for them. The zero value is ready to
// use; a Children must not be copied after first use.
//
// The reaper's side of the contract: for every status wait4 returns, call Exited. Exited never
// blocks for long (it may wait for a fork in progress, to route a status that raced it).
type Children struct {
	mu      sync.Mutex
	waiting map[int]chan unix.WaitStatus // pid -> where its final status goes; buffered, 1
}

// Exited hands a status the reaper collected to the hook that started pid, if one did. It
// reports whether pid is a hook's process, so that the caller need not treat it as an orphan.
// Statuses that do not end the process (stopped, continued) are not routed but still reported
// as a hook's. After the final status, pid is forgotten: a later process with the same pid is
// not mistaken for the hook's.
func (c *Children) Exited(pid int, ws unix.WaitStatus) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.waiting[pid]
	if !ok {
		return false
	}
	if ws.Exited() || ws.Signaled() {
		ch <- ws // never blocks: the buffer is for this one status
		delete(c.waiting, pid)
	}
	return true
}

// start runs fork, which starts one process and returns its pid, and registers the pid before
// anyone can route its status: the reaper may collect the process before fork returns, but it
// cannot hand the status over (Exited takes the same lock) until the pid is registered. The
// channel receives the process's final status once.
func (c *Children) start(fork func() (int, error)) (int, <-chan unix.WaitStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pid, err := fork()
	if err != nil {
		return 0, nil, err
	}
	if c.waiting == nil {
		c.waiting = map[int]chan unix.WaitStatus{}
	}
	ch := make(chan unix.WaitStatus, 1)
	c.waiting[pid] = ch
	return pid, ch, nil
}

// forget drops pid when its hook gives up waiting for it, so the map cannot grow with pids the
// reaper never reports.
func (c *Children) forget(pid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiting, pid)
}
