package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// instruction is one Dockerfile instruction with continuation lines joined.
type instruction struct{ op, args string }

func dockerfile(t *testing.T) []instruction {
	t.Helper()
	b, err := os.ReadFile("docker/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	cur := ""
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		cur += " " + strings.TrimSuffix(trimmed, "\\")
		if strings.HasSuffix(trimmed, "\\") {
			continue
		}
		op, args, _ := strings.Cut(strings.TrimSpace(cur), " ")
		out = append(out, instruction{strings.ToUpper(op), strings.TrimSpace(args)})
		cur = ""
	}
	return out
}

// dockerfileUser returns the numeric user of the final image.
func dockerfileUser(t *testing.T) string {
	t.Helper()
	user := ""
	for _, in := range dockerfile(t) {
		if in.op == "USER" {
			user, _, _ = strings.Cut(in.args, ":")
		}
	}
	return user
}

// dockerEnv returns the ENV of the final stage.
func dockerEnv(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, in := range dockerfile(t) {
		if in.op == "FROM" {
			env = map[string]string{}
		}
		if in.op == "ENV" {
			for _, kv := range strings.Fields(in.args) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		}
	}
	return env
}

// TestDockerfile checks the image recipe: a multi-stage build of a static
// binary with the Go version of go.mod, a non-root user, real MATCHD_
// variables, exposed ports and a health check that match them.
func TestDockerfile(t *testing.T) {
	s := theServer(t)
	ins := dockerfile(t)
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	var froms []string
	joined := ""
	for _, in := range ins {
		joined += in.op + " " + in.args + "\n"
		if in.op == "FROM" {
			froms = append(froms, in.args)
		}
	}
	if len(froms) < 2 {
		t.Errorf("want a multi-stage build, have FROM %v", froms)
	} else if goVersion == nil || !strings.HasPrefix(froms[0], "golang:"+string(goVersion[1])) {
		t.Errorf("build stage %q does not use the Go version of go.mod (%s)", froms[0], goVersion)
	}
	if !strings.Contains(joined, "CGO_ENABLED=0") || !strings.Contains(joined, "./cmd/matchd") {
		t.Errorf("the build must make a static matchd (CGO_ENABLED=0 go build ./cmd/matchd)")
	}
	if u := dockerfileUser(t); u == "" || u == "0" || u == "root" || !regexp.MustCompile(`^\d+$`).MatchString(u) {
		t.Errorf("USER %q: want a numeric non-root user (Kubernetes runAsNonRoot checks numbers)", u)
	}
	env := dockerEnv(t)
	for k := range env {
		s.checkEnv(t, "Dockerfile ENV", k)
	}
	_, listen := addrPort(t, "MATCHD_LISTEN", env["MATCHD_LISTEN"])
	_, tcp := addrPort(t, "MATCHD_TCP_LISTEN", env["MATCHD_TCP_LISTEN"])
	_, gossip := addrPort(t, "default gossip", s.envs["MATCHD_GOSSIP_ADDR"])
	_, remote := addrPort(t, "default remote", s.envs["MATCHD_REMOTE_ADDR"])
	exposed := map[string]bool{}
	var health string
	for _, in := range ins {
		switch in.op {
		case "EXPOSE":
			for _, p := range strings.Fields(in.args) {
				exposed[p] = true
			}
		case "HEALTHCHECK":
			health = in.args
		}
	}
	for _, p := range []string{itoa(listen) + "/tcp", itoa(tcp) + "/tcp", itoa(gossip) + "/tcp", itoa(gossip) + "/udp", itoa(remote) + "/tcp"} {
		if !exposed[p] {
			t.Errorf("EXPOSE lacks %s", p)
		}
	}
	if !strings.Contains(health, "127.0.0.1:"+itoa(listen)+"/healthz") {
		t.Errorf("HEALTHCHECK %q does not ask /healthz on the listen port %d", health, listen)
	}
}

// composeFile is the part of the compose specification compose.yaml uses;
// decoding is strict, so a misspelt key fails. There is no networks key:
// podman-compose 1.0.3 supports neither ipv4_address nor every form of it,
// and members find each other by service name on the default network.
type composeFile struct {
	Name     string `json:"name"`
	Services map[string]struct {
		Image string `json:"image"`
		Build *struct {
			Context    string `json:"context"`
			Dockerfile string `json:"dockerfile"`
		} `json:"build"`
		Entrypoint  []string          `json:"entrypoint"`
		Restart     string            `json:"restart"`
		Environment map[string]string `json:"environment"`
		Ports       []string          `json:"ports"`
		DependsOn   map[string]struct {
			Condition string `json:"condition"`
		} `json:"depends_on"`
		Healthcheck *struct {
			Test     []string `json:"test"`
			Interval string   `json:"interval"`
			Timeout  string   `json:"timeout"`
			Retries  int      `json:"retries"`
		} `json:"healthcheck"`
		Volumes         []string `json:"volumes"`
		StopGracePeriod string   `json:"stop_grace_period"`
	} `json:"services"`
	Volumes map[string]struct{} `json:"volumes"`
}

// composeVar is ${NAME:-default} or ${NAME} in compose.yaml; $$ is a $.
var composeVar = regexp.MustCompile(`\$\{[A-Z0-9_]+(?::-([^}]*))?\}`)

// withDefaults is v as compose reads it with none of its variables set.
func withDefaults(v string) string {
	v = composeVar.ReplaceAllString(v, "$1")
	return strings.ReplaceAll(v, "$$", "$")
}

// TestComposeFile checks compose.yaml: three matchd members and PostgreSQL
// 15, env names that matchd reads, a gossip address that is each member's
// own IP (set by the entry point), a remote advertised under the member's
// service name with a certificate for it, seeds that are members, and
// ports that match the image. deploy/docker/compose-run.sh (make
// compose-test) runs the file for real with podman-compose.
func TestComposeFile(t *testing.T) {
	s := theServer(t)
	b, err := os.ReadFile("docker/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Extension fields (x-…) hold the anchors; they are not services.
	var generic map[string]any
	if err := yaml.Unmarshal(b, &generic); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	for k := range generic {
		if strings.HasPrefix(k, "x-") {
			delete(generic, k)
		}
	}
	plain, _ := json.Marshal(generic)
	var cf composeFile
	if err := yaml.UnmarshalStrict(plain, &cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	pg, ok := cf.Services["postgres"]
	if !ok || withDefaults(pg.Image) != "postgres:15" || pg.Healthcheck == nil {
		t.Errorf("want a postgres service on postgres:15 with a health check")
	}
	imageEnv := dockerEnv(t)
	_, listen := addrPort(t, "image MATCHD_LISTEN", imageEnv["MATCHD_LISTEN"])
	_, tcp := addrPort(t, "image MATCHD_TCP_LISTEN", imageEnv["MATCHD_TCP_LISTEN"])
	gossipPorts := map[string]int{}
	members := 0
	secrets := runClusterSecrets(t, "docker/compose.yaml")
	for name, svc := range cf.Services {
		if svc.Build == nil {
			continue
		}
		members++
		where := "compose " + name
		if _, err := os.Stat(filepath.Join("docker", svc.Build.Context, svc.Build.Dockerfile)); err != nil {
			t.Errorf("%s: build %s/%s: %v", where, svc.Build.Context, svc.Build.Dockerfile, err)
		}
		env := map[string]string{}
		for k, v := range svc.Environment {
			s.checkEnv(t, where, k)
			env[k] = withDefaults(v)
		}
		// The entry point sets the gossip address to the container's IP
		// and runs the image's matchd.
		entry := withDefaults(strings.Join(svc.Entrypoint, " "))
		m := regexp.MustCompile(`\b(MATCHD_GOSSIP_ADDR)=\$\(hostname -i[^)]*\):(\d+) exec /usr/local/bin/matchd"?$`).FindStringSubmatch(entry)
		if m == nil {
			t.Errorf("%s: entrypoint %q does not set MATCHD_GOSSIP_ADDR to the container's IP and exec matchd", where, entry)
		} else {
			s.checkEnv(t, where+" entrypoint", m[1])
			gossipPorts[name], _ = strconv.Atoi(m[2])
		}
		if svc.DependsOn["postgres"].Condition != "service_healthy" {
			t.Errorf("%s: must wait for a healthy postgres", where)
		}
		if !strings.Contains(env["MATCHD_DATABASE_URL"], "@postgres:5432/") {
			t.Errorf("%s: MATCHD_DATABASE_URL must point at the postgres service", where)
		}
		// Peers dial the advertised remote by service name; its port is
		// the one the remote binds.
		host, port := addrPort(t, where+" MATCHD_ADVERTISE_REMOTE_ADDR", env["MATCHD_ADVERTISE_REMOTE_ADDR"])
		bindHost, bindPort := addrPort(t, where+" MATCHD_REMOTE_ADDR", env["MATCHD_REMOTE_ADDR"])
		if host != name || port != bindPort || bindHost != "0.0.0.0" {
			t.Errorf("%s: remote binds %q and advertises %q, want 0.0.0.0:P and %s:P", where, env["MATCHD_REMOTE_ADDR"], env["MATCHD_ADVERTISE_REMOTE_ADDR"], name)
		}
		for _, k := range []string{"MATCHD_LISTEN", "MATCHD_TCP_LISTEN"} {
			if v, ok := env[k]; ok && v != imageEnv[k] {
				t.Errorf("%s: %s = %q differs from the image's %q", where, k, v, imageEnv[k])
			}
		}
		for _, p := range svc.Ports {
			_, container, _ := strings.Cut(withDefaults(p), ":")
			if container != itoa(listen) && container != itoa(tcp) {
				t.Errorf("%s: port %q maps to neither the HTTP (%d) nor the TCP (%d) port", where, p, listen, tcp)
			}
		}
		// Cluster secrets: mounted files, and the command in the file's
		// header makes a certificate for the advertised name.
		mounts := map[string]bool{}
		for _, v := range svc.Volumes {
			parts := strings.Split(withDefaults(v), ":")
			if len(parts) >= 2 {
				mounts[parts[1]] = true
			}
		}
		for _, k := range []string{"MATCHD_GOSSIP_KEY_FILE", "MATCHD_CLUSTER_TLS_CA", "MATCHD_CLUSTER_TLS_CERT", "MATCHD_CLUSTER_TLS_KEY"} {
			if !mounts[filepath.Dir(env[k])] {
				t.Errorf("%s: %s = %q is not in a mounted volume", where, k, env[k])
			}
		}
		if secrets != "" {
			checkMemberCert(t, secrets, strings.TrimSuffix(filepath.Base(env["MATCHD_CLUSTER_TLS_CERT"]), ".crt"), host)
		}
	}
	if members != 3 {
		t.Errorf("compose.yaml has %d matchd members, want 3", members)
	}
	for name, svc := range cf.Services {
		if svc.Build == nil {
			continue
		}
		for _, seed := range strings.Split(withDefaults(svc.Environment["MATCHD_JOIN"]), ",") {
			host, port := addrPort(t, "compose "+name+" MATCHD_JOIN", seed)
			if p, ok := gossipPorts[host]; !ok || p != port {
				t.Errorf("compose %s: seed %q is no member's gossip address", name, seed)
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
