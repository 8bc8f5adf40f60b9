module github.com/drainit/drainit

go 1.26.8

require (
	github.com/caarlos0/env/v11 v11.4.2
	github.com/prometheus/procfs v0.23.0
	github.com/rs/zerolog v1.35.1
	golang.org/x/sys v0.49.0
)

require (
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
)
