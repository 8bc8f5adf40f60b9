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
// waits for a fork in progress.
type Children struct {
	mu      sync.Mutex
	waiting map[int]chan unix.WaitStatus // pid -> where its final status goes; buffered, 1
	forking int                          // forks in progress
	// early holds the final statuses the reaper collected, while a fork was in progress, for
	// pids no hook had registered: one may be the process that fork started, reaped before the
	// fork returned its pid. Cleared when no fork is in progress.
	early map[int]unix.WaitStatus
}

// Exited hands a status the reaper collected to the hook that started pid, if one did. It
// reports whether pid is a hook's process, so that the caller need not treat it as an orphan.
// Statuses that do not end the process (stopped, continued) are not routed but still reported
// as a hook's. After the final status, pid is forgotten: a later process with the same pid is
// not mistaken for the hook's. It never waits for a fork: a status that may belong to a fork in
// progress is kept for it, and reported as no hook's (the caller logs it as an orphan's).
func (c *Children) Exited(pid int, ws unix.WaitStatus) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	final := ws.Exited() || ws.Signaled()
	ch, ok := c.waiting[pid]
	if !ok {
		if final && c.forking > 0 {
			if c.early == nil {
				c.early = map[int]unix.WaitStatus{}
			}
			c.early[pid] = ws
		}
		return false
	}
	if final {
		ch <- ws // never blocks: the buffer is for this one status
		delete(c.waiting, pid)
	}
	return true
}

// start runs fork, which starts one process and returns its pid, and registers the pid. It holds
// no lock while fork runs: a fork can take as long as the exec's opening of the program does
// (a program on a hung network volume, a file lease held), and the reaper, which calls Exited
// for every status, must never wait for it. A status the reaper collected for the new process
// before the pid was registered is found among the early ones. The channel receives the
// process's final status once.
func (c *Children) start(fork func() (int, error)) (int, <-chan unix.WaitStatus, error) {
	c.mu.Lock()
	c.forking++
	c.mu.Unlock()
	pid, err := fork()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forking--
	defer func() {
		if c.forking == 0 {
			c.early = nil // a pid among them could be taken again only after a wrap of the pid space
		}
	}()
	if err != nil {
		return 0, nil, err
	}
	ch := make(chan unix.WaitStatus, 1)
	if ws, ok := c.early[pid]; ok {
		delete(c.early, pid)
		ch <- ws
		return pid, ch, nil
	}
	if c.waiting == nil {
		c.waiting = map[int]chan unix.WaitStatus{}
	}
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
