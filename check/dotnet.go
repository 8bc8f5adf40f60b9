package check

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// .NET's generic host (every ASP.NET Core app since 3.0): at SIGTERM its ConsoleLifetime calls
// StopApplication, and the host's StopAsync gives its hosted services, Kestrel's graceful stop
// among them, HostOptions.ShutdownTimeout; then Main returns and the process exits. The default
// is 30s since .NET 7 (dotnet/runtime#63712; 5s in .NET 6 and before; the older WebHost went to
// 30s in .NET 8, dotnet/aspnetcore#48606):
// https://learn.microsoft.com/dotnet/api/microsoft.extensions.hosting.hostoptions.shutdowntimeout
//
// The host reads it from configuration key shutdownTimeoutSeconds (HostOptions.Initialize:
// int.TryParse with NumberStyles.None, so anything but plain digits is ignored and the default
// stays). Configuration comes, later winning, from DOTNET_-prefixed variables, ASPNETCORE_-
// prefixed ones (ASP.NET Core), appsettings.json, unprefixed variables, and the command line;
// keys and prefixes are case-insensitive. An app that binds HostOptions to its configuration
// (services.Configure<HostOptions>(config.GetSection("HostOptions"))) also reads
// HostOptions__ShutdownTimeout, a TimeSpan ("00:00:45"), and that wins: it is applied after.
// .NET does not bind it by itself.
//
// Evidence: one of these settings, an ASPNETCORE_* variable (ASP.NET Core reads them: the app is
// an ASP.NET Core host), or the ASP.NET Core runtime image mcr.microsoft.com/dotnet/aspnet.

const (
	dotnetDefault = 30 * time.Second
	dotnetDoc     = "learn.microsoft.com/dotnet/api/microsoft.extensions.hosting.hostoptions.shutdowntimeout"
)

// dotnetSetting is one place a .NET setting may be read from, highest precedence first.
type dotnetSetting struct {
	src, value string
	line       int
	shown      bool
}

func dotnetStop(c *Container, words []word, env envMap) *appStop {
	a := &appStop{name: ".NET"}
	evidence := 0
	// Variables by upper-cased name: configuration keys and prefixes are case-insensitive. In
	// the manifest's order, not the map's, so that each run gives the same answer: the first
	// ASPNETCORE_ variable is the evidence, and of two names that differ only in case (which
	// .NET reads in an order of its own) the later one counts.
	vars := map[string]EnvVar{}
	for _, e := range c.Env {
		v := env.vars[e.Name] // the last of the same name, as the kubelet takes it
		u := strings.ToUpper(v.Name)
		vars[u] = v
		if strings.HasPrefix(u, "ASPNETCORE_") && evidence == 0 {
			evidence = v.Line
		}
	}
	lookup := func(upper string) (dotnetSetting, bool) {
		v, ok := vars[upper]
		if !ok {
			return dotnetSetting{}, false
		}
		return dotnetSetting{src: v.Name, value: env.expandK8s(v.Value, false), line: v.Line,
			shown: v.Known && !unseen(env.expandK8s(v.Value, true))}, true
	}
	var secs, span []dotnetSetting
	// The command line: --shutdownTimeoutSeconds=N, --shutdownTimeoutSeconds N (or /key).
	for i, w := range words {
		for _, pre := range []string{"--", "/"} {
			k, v, eq := strings.Cut(w.s, "=")
			if !strings.EqualFold(k, pre+"shutdownTimeoutSeconds") {
				continue
			}
			if !eq {
				if i+1 >= len(words) {
					continue
				}
				v = words[i+1].s
			}
			secs = append(secs, dotnetSetting{src: k, value: v, line: w.line, shown: !unseen(v)})
		}
	}
	for _, pre := range []string{"", "ASPNETCORE_", "DOTNET_"} {
		if s, ok := lookup(pre + "SHUTDOWNTIMEOUTSECONDS"); ok {
			secs = append(secs, s)
		}
		if s, ok := lookup(pre + "HOSTOPTIONS__SHUTDOWNTIMEOUT"); ok {
			span = append(span, s)
		}
	}
	if evidence == 0 && aspnetImage(c.Image) {
		evidence = c.ImageLine
	}
	if len(secs) == 0 && len(span) == 0 && evidence == 0 {
		return nil
	}
	a.line = evidence
	// HostOptions bound from configuration, when the manifest sets it and it reads well.
	if len(span) > 0 {
		s := span[0]
		if !s.shown {
			return a
		}
		d, err := parseTimeSpan(s.value)
		switch {
		case err != nil:
			a.warn(s.line, RuleDotnetDuration, "%s %q: %v; the shutdown time is not checked", s.src, s.value, err)
			return a
		case !strings.Contains(s.value, ":"):
			n := strings.TrimSpace(s.value)
			a.warn(s.line, RuleDotnetDuration, "%s %q is a TimeSpan: .NET reads a bare number as days (%s.00:00:00), not seconds; "+
				"write %s for %s seconds", s.src, s.value, n, timeSpanOf(int64(d/(24*time.Hour))), n)
		case strings.Count(s.value, ":") == 1 && d >= time.Minute:
			a.warn(s.line, RuleDotnetDuration, "%s %q is a TimeSpan read as hours:minutes, %s; write 00:%s if minutes:seconds were meant",
				s.src, s.value, fmtDur(d), strings.TrimSpace(s.value))
		default:
			a.at = &appTime{d: d, src: ".NET " + s.src + " " + s.value + " (read if the app binds HostOptions to configuration)", line: s.line}
			return a
		}
	}
	for _, s := range secs {
		if !s.shown {
			return a // the winning value is not shown
		}
		if n, err := strconv.ParseUint(s.value, 10, 31); err == nil && s.value[0] >= '0' && s.value[0] <= '9' {
			a.at = &appTime{d: seconds(int64(n)), src: ".NET " + s.src + " " + s.value, line: s.line}
			return a
		}
		a.warn(s.line, RuleDotnetDuration, "%s %q: .NET reads shutdownTimeoutSeconds as plain digits, a whole number of seconds, "+
			"and silently ignores anything else, so the host keeps ShutdownTimeout %s (its default since .NET 7); write the seconds as digits, like 30",
			s.src, s.value, fmtDur(dotnetDefault))
		// An ignored value falls through to the next source, or the default.
	}
	if env.envFrom {
		return a // a variable the manifest does not list may set it
	}
	line := a.line
	if len(secs) > 0 {
		line = secs[0].line
	}
	if line == 0 {
		line = evidence
	}
	a.at = &appTime{d: dotnetDefault, src: ".NET's default HostOptions.ShutdownTimeout 30s since .NET 7, " + dotnetDoc, line: line}
	return a
}

// parseTimeSpan reads a TimeSpan as .NET's configuration binder does (TimeSpan.Parse,
// invariant culture): "d", or "[d.]hh:mm[:ss[.fffffff]]", optional sign and blanks.
func parseTimeSpan(s string) (time.Duration, error) {
	bad := fmt.Errorf("not a TimeSpan .NET reads (like 00:00:30)")
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("negative TimeSpan")
	}
	num := func(p string, max int64) (int64, bool) {
		if p == "" || len(p) > 8 {
			return 0, false
		}
		n, err := strconv.ParseInt(p, 10, 64)
		return n, err == nil && p[0] != '+' && n <= max
	}
	if !strings.Contains(t, ":") {
		n, ok := num(t, 10675199)
		if !ok {
			return 0, bad
		}
		return scaleDur(n, 24*time.Hour), nil
	}
	parts := strings.Split(t, ":")
	if len(parts) > 3 {
		return 0, bad
	}
	var days int64
	if d, h, ok := strings.Cut(parts[0], "."); ok {
		n, okd := num(d, 10675199)
		if !okd {
			return 0, bad
		}
		days, parts[0] = n, h
	}
	h, ok1 := num(parts[0], 23)
	m, ok2 := num(parts[1], 59)
	if !ok1 || !ok2 {
		return 0, bad
	}
	total := scaleDur(days, 24*time.Hour) + time.Duration(h)*time.Hour + time.Duration(m)*time.Minute
	if len(parts) == 3 {
		sec, frac, hasFrac := strings.Cut(parts[2], ".")
		sn, ok := num(sec, 59)
		if !ok {
			return 0, bad
		}
		total += time.Duration(sn) * time.Second
		if hasFrac {
			if frac == "" || len(frac) > 7 {
				return 0, bad
			}
			f, err := strconv.ParseUint(frac, 10, 64)
			if err != nil {
				return 0, bad
			}
			for i := len(frac); i < 9; i++ {
				f *= 10
			}
			total += time.Duration(f)
		}
	}
	return total, nil
}

// timeSpanOf writes secs seconds as a TimeSpan: 00:00:45, 00:02:00.
func timeSpanOf(secs int64) string {
	return fmt.Sprintf("%02d:%02d:%02d", secs/3600, secs/60%60, secs%60)
}

// aspnetImage says whether an image is Microsoft's ASP.NET Core runtime image, which runs a
// generic host: mcr.microsoft.com/dotnet/aspnet (any tag).
func aspnetImage(image string) bool {
	ref, _ := imageName(image)
	return ref == "mcr.microsoft.com/dotnet/aspnet"
}
