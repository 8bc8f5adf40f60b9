package signals

import (
	"syscall"
	"testing"
)

func TestByImage(t *testing.T) {
	quit, winch, usr1 := SIGQUIT, SIGWINCH, SIGUSR1
	for image, want := range map[string]syscall.Signal{
		"nginx": quit, "nginx:1.27": quit, "docker.io/library/nginx": quit, "bitnami/nginx:1.27": quit,
		"nginxinc/nginx-unprivileged:1.27-alpine": quit, "localhost:5000/nginx@sha256:00": quit,
		"php:8.3-fpm": quit, "php:fpm-alpine": quit, "bitnami/php-fpm": quit, "registry.example.com/team/php-fpm-app:2": quit,
		"httpd": winch, "httpd:2.4": winch, "docker.io/library/httpd:2.4-alpine": winch, "HTTPD:2.4": winch,
		"php:8.3-apache": winch, "php:apache-bookworm": winch, "registry.example.com/php:8-apache@sha256:00": winch,
		"haproxy": usr1, "haproxy:3.0-alpine": usr1, "docker.io/library/haproxy:lts": usr1,
		"php:8.3": 0, "my-nginx": 0, "nginx.example.com/web:1": 0, "openresty/openresty": 0, "fpm": 0, "": 0,
		"httpd-exporter:1": 0, "my-httpd": 0, "haproxytech/kubernetes-ingress": 0, "haproxy-ingress:0.14": 0,
		"httpd.example.com/web:1": 0, "apache/airflow": 0,
	} {
		got, ok := ByImage(image)
		if want == 0 && ok || want != 0 && got.Signal != want {
			t.Errorf("ByImage(%q) = %v %v, want %v", image, got, ok, want)
		}
	}
}

func TestByCommand(t *testing.T) {
	quit, winch, usr1 := SIGQUIT, SIGWINCH, SIGUSR1
	for _, c := range []struct {
		argv []string
		want syscall.Signal
		word string
	}{
		{[]string{"nginx", "-g", "daemon off;"}, quit, "nginx"},
		{[]string{"/usr/sbin/nginx-debug"}, quit, "/usr/sbin/nginx-debug"},
		{[]string{"/docker-entrypoint.sh", "nginx", "-g", "daemon off;"}, quit, "nginx"},
		{[]string{"docker-php-entrypoint", "php-fpm"}, quit, "php-fpm"},
		{[]string{"/usr/sbin/php-fpm8.2", "-F"}, quit, "/usr/sbin/php-fpm8.2"},
		{[]string{"httpd-foreground"}, winch, "httpd-foreground"},
		{[]string{"apache2-foreground"}, winch, "apache2-foreground"},
		{[]string{"/usr/sbin/apache2", "-DFOREGROUND"}, winch, "/usr/sbin/apache2"},
		{[]string{"apachectl", "-D", "FOREGROUND"}, winch, "apachectl"},
		{[]string{"docker-entrypoint.sh", "haproxy", "-f", "/usr/local/etc/haproxy/haproxy.cfg"}, usr1, "haproxy"},
		{[]string{"haproxy", "-W", "-db"}, usr1, "haproxy"},
		// Not the program: an argument, a third word, a flag's value, a look-alike.
		{[]string{"/app", "--proxy", "nginx"}, 0, ""},
		{[]string{"/app", "nginx"}, 0, ""},
		{[]string{"/entrypoint.sh", "--", "nginx"}, 0, ""},
		{[]string{"sh", "-c", "nginx"}, 0, ""},
		{[]string{"/app", "-nginx"}, 0, ""},
		{[]string{"nginx-exporter"}, 0, ""},
		{[]string{"haproxy-ingress-controller"}, 0, ""},
		{[]string{"java", "-jar", "app.jar"}, 0, ""},
		{nil, 0, ""},
		{[]string{""}, 0, ""},
	} {
		got, word, ok := ByCommand(c.argv)
		if c.want == 0 && ok || c.want != 0 && (got.Signal != c.want || word != c.word) {
			t.Errorf("ByCommand(%q) = %v %q %v, want %v %q", c.argv, got, word, ok, c.want, c.word)
		}
	}
}
