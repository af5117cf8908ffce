package config

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// flagSet wraps flag.FlagSet so that every flag also reads an environment
// variable (MATCHD_ + upper-case name with dashes as underscores); an
// explicit flag wins over the environment.
type flagSet struct {
	*flag.FlagSet
	envErr []error
}

func envName(name string) string {
	return "MATCHD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

func (f *flagSet) usageWithEnv(usage, name string) string {
	return fmt.Sprintf("%s (env %s)", usage, envName(name))
}

func (f *flagSet) String(name, def, usage string) *string {
	if v, ok := os.LookupEnv(envName(name)); ok {
		def = v
	}
	return f.FlagSet.String(name, def, f.usageWithEnv(usage, name))
}

func (f *flagSet) Duration(name string, def time.Duration, usage string) *time.Duration {
	if v, ok := os.LookupEnv(envName(name)); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			f.envErr = append(f.envErr, fmt.Errorf("%s: %w", envName(name), err))
		} else {
			def = d
		}
	}
	return f.FlagSet.Duration(name, def, f.usageWithEnv(usage, name))
}

func (f *flagSet) Bool(name string, def bool, usage string) *bool {
	if v, ok := os.LookupEnv(envName(name)); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			f.envErr = append(f.envErr, fmt.Errorf("%s: %w", envName(name), err))
		} else {
			def = b
		}
	}
	return f.FlagSet.Bool(name, def, f.usageWithEnv(usage, name))
}

func (f *flagSet) Int(name string, def int, usage string) *int {
	if v, ok := os.LookupEnv(envName(name)); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			f.envErr = append(f.envErr, fmt.Errorf("%s: %w", envName(name), err))
		} else {
			def = n
		}
	}
	return f.FlagSet.Int(name, def, f.usageWithEnv(usage, name))
}

func (f *flagSet) Float64(name string, def float64, usage string) *float64 {
	if v, ok := os.LookupEnv(envName(name)); ok {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			f.envErr = append(f.envErr, fmt.Errorf("%s: %w", envName(name), err))
		} else {
			def = x
		}
	}
	return f.FlagSet.Float64(name, def, f.usageWithEnv(usage, name))
}

// splitList splits a comma-separated flag value, dropping empty parts.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
