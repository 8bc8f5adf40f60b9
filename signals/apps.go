// Apps: the servers whose graceful stop is not SIGTERM, and the images that
// say so in their STOPSIGNAL: nginx and php-fpm stop gracefully on SIGQUIT, Apache httpd on
// SIGWINCH (graceful-stop), haproxy on SIGUSR1 (soft-stop); to each of them SIGTERM is the
// fast stop, which cuts the requests in hand. Their official images set that signal as
// STOPSIGNAL, and every image built FROM them inherits it, so docker, podman and the kubelet
// (through containerd) stop such a container with it. Unless it is one of drainit's triggers,
// drainit passes it to the app at once, with no drain.
//
// Both uses are guesses from a name: `drainit check` sees a manifest's image, drainit at start
// sees the app's command. Sources: the STOPSIGNAL lines of the images' Dockerfiles
// (docker-library: nginx, php *-fpm and *-apache, httpd, haproxy).

package signals

import (
	"path"
	"strings"
	"syscall"
)

// Stop is a server's graceful stop.
type Stop struct {
	App    string         // the server, as messages name it
	Signal syscall.Signal // the signal it stops gracefully on, its images' STOPSIGNAL
	// ForwardChild: drainit must pass the signal to the app alone (--forward child). haproxy -W
	// (its official image's entry point runs it so) has its master pass the signal on to its
	// workers, and a worker that gets it from drainit too (--forward group) exits 138 or 139
	// about one stop in a hundred (integration/realapps_test.go).
	ForwardChild bool
	// Relays says why the app wants --forward child with its graceful stop: its master or parent
	// stops its workers itself, and with --forward group they get the signal from drainit too
	// (drainit warns of such a pre-fork master at the stop; README: the stop signal).
	Relays string
}

// ForwardAdvice is what to append to the advice to set --stop-signal when the app wants
// --forward child and forward (the setting's value) is not it: "" otherwise.
func (s Stop) ForwardAdvice(forward string) string {
	if s.Relays == "" || forward == "child" {
		return ""
	}
	return " and --forward child (" + s.Relays + ")"
}

var (
	nginx = Stop{App: "nginx", Signal: SIGQUIT,
		Relays: "nginx's master passes the signal on to its workers; from drainit too, each gets it twice"}
	phpFPM = Stop{App: "php-fpm", Signal: SIGQUIT,
		Relays: "php-fpm's master stops its workers itself; from drainit too, each gets the signal twice"}
	httpd = Stop{App: "Apache httpd", Signal: SIGWINCH,
		Relays: "httpd's parent stops its children itself; from drainit too, the prefork MPM's get the signal twice"}
	haproxy = Stop{App: "haproxy", Signal: SIGUSR1, ForwardChild: true,
		Relays: "haproxy -W's master passes the signal to its workers; from drainit too, a worker can get it twice and exit 138"}
)

// ByImage guesses from an image reference alone whether it is built FROM one of those images, by
// the last path component, tag included (nginx:1.27, bitnami/nginx, php:8.3-fpm, php:8.3-apache).
// httpd and haproxy must be the repository's whole name: their look-alikes (haproxy-ingress, an
// ingress controller) are other programs with other stop signals.
func ByImage(image string) (Stop, bool) {
	ref := strings.ToLower(image)
	if at := strings.IndexByte(ref, '@'); at >= 0 {
		ref = ref[:at]
	}
	last := ref[strings.LastIndexByte(ref, '/')+1:]
	repo, _, _ := strings.Cut(last, ":")
	switch {
	case strings.HasPrefix(last, "nginx"):
		return nginx, true
	case strings.Contains(last, "php") && strings.Contains(last, "fpm"):
		return phpFPM, true
	case strings.Contains(last, "php") && strings.Contains(last, "apache"), repo == "httpd":
		return httpd, true
	case repo == "haproxy":
		return haproxy, true
	}
	return Stop{}, false
}

// ByCommand guesses from an app's command whether it runs one of those servers: its program, or
// the first argument of an entry point script that runs it (/docker-entrypoint.sh nginx -g …,
// docker-php-entrypoint php-fpm: a program whose name ends in ".sh" or holds "entrypoint"). It
// returns the word that matched.
func ByCommand(argv []string) (Stop, string, bool) {
	if len(argv) == 0 {
		return Stop{}, "", false
	}
	prog := path.Base(argv[0])
	if s, ok := byProgram(prog); ok {
		return s, argv[0], true
	}
	if len(argv) > 1 && (strings.HasSuffix(prog, ".sh") || strings.Contains(prog, "entrypoint")) {
		if s, ok := byProgram(path.Base(argv[1])); ok {
			return s, argv[1], true
		}
	}
	return Stop{}, "", false
}

// byProgram knows the servers' programs as the images and Debian name them.
func byProgram(name string) (Stop, bool) {
	switch {
	case name == "nginx" || name == "nginx-debug":
		return nginx, true
	case strings.HasPrefix(name, "php-fpm"):
		return phpFPM, true
	case name == "httpd" || name == "httpd-foreground" || name == "apache2" || name == "apache2-foreground" ||
		name == "apache2ctl" || name == "apachectl":
		return httpd, true
	case name == "haproxy":
		return haproxy, true
	}
	return Stop{}, false
}
