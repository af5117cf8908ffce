package deploy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	cnpgv1 "github.com/cloudnative-pg/cloudnative-pg/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// manifests are the decoded objects of deploy/k8s.
type manifests struct {
	statefulSets []*appsv1.StatefulSet
	services     []*corev1.Service
	secrets      []*corev1.Secret
	pdbs         []*policyv1.PodDisruptionBudget
	// databases are CloudNativePG clusters (postgres-cluster.yaml).
	databases []*cnpgv1.Cluster
}

// loadManifests decodes every document of every file kustomization.yaml
// lists into its official Kubernetes API type, rejecting unknown fields, and
// checks that the kustomization lists every manifest of the folder.
func loadManifests(t *testing.T) *manifests {
	t.Helper()
	var kust struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	b, err := os.ReadFile("k8s/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, _ := filepath.Glob("k8s/*.yaml")
	var want []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			want = append(want, filepath.Base(f))
		}
	}
	got := append([]string(nil), kust.Resources...)
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("kustomization.yaml lists %v, the folder holds %v", got, want)
	}
	m := &manifests{}
	for _, f := range kust.Resources {
		b, err := os.ReadFile(filepath.Join("k8s", f))
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s doc %d: %v", f, i, err)
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 StatefulSet":
				o := &appsv1.StatefulSet{}
				m.statefulSets, obj = append(m.statefulSets, o), o
			case "v1 Service":
				o := &corev1.Service{}
				m.services, obj = append(m.services, o), o
			case "v1 Secret":
				o := &corev1.Secret{}
				m.secrets, obj = append(m.secrets, o), o
			case "postgresql.cnpg.io/v1 Cluster":
				o := &cnpgv1.Cluster{}
				m.databases, obj = append(m.databases, o), o
			case "policy/v1 PodDisruptionBudget":
				o := &policyv1.PodDisruptionBudget{}
				m.pdbs, obj = append(m.pdbs, o), o
			default:
				t.Fatalf("%s doc %d: unexpected %s %s (add it to this test)", f, i, tm.APIVersion, tm.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				t.Fatalf("%s doc %d (%s): %v", f, i, tm.Kind, err)
			}
		}
	}
	return m
}

// operatorSecret reports a key of a Secret that the CloudNativePG operator
// writes for a Cluster of the manifests: the application user's
// credentials, "<cluster>-app".
func (m *manifests) operatorSecret(name, key string) bool {
	for _, db := range m.databases {
		if name == db.GetApplicationSecretName() {
			return slices.Contains([]string{"uri", "username", "password", "host", "port", "dbname", "pgpass"}, key)
		}
	}
	return false
}

func (m *manifests) service(name string) *corev1.Service {
	for _, s := range m.services {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// addrPort splits "host:port" and returns the port.
func addrPort(t *testing.T, where, addr string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("%s: %q is not host:port: %v", where, addr, err)
		return "", 0
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Errorf("%s: port of %q: %v", where, addr, err)
	}
	return host, n
}

// TestKubernetesManifests checks that the manifests decode strictly into the
// Kubernetes API types and agree with each other and with matchd: env names,
// ports, probes, selectors, secrets, the drain budget.
func TestKubernetesManifests(t *testing.T) {
	s := theServer(t)
	m := loadManifests(t)
	if len(m.statefulSets) != 1 || len(m.pdbs) != 1 || len(m.secrets) != 1 {
		t.Fatalf("want one StatefulSet, one PodDisruptionBudget, one Secret; have %d, %d, %d",
			len(m.statefulSets), len(m.pdbs), len(m.secrets))
	}
	ss := m.statefulSets[0]
	pod := ss.Spec.Template
	podLabels := labels.Set(pod.Labels)
	sel, err := metav1.LabelSelectorAsSelector(ss.Spec.Selector)
	if err != nil || !sel.Matches(podLabels) {
		t.Errorf("StatefulSet selector %v does not match its pods' labels %v (%v)", ss.Spec.Selector, pod.Labels, err)
	}
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas < 3 {
		t.Errorf("replicas = %v, want at least 3 (a member may fail while another drains)", ss.Spec.Replicas)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("want one container, have %d", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	ports := map[string]corev1.ContainerPort{}
	for _, p := range c.Ports {
		ports[p.Name] = p
	}

	// Environment: every MATCHD_ name is a matchd flag; $(VAR) references
	// are defined earlier; secret references exist.
	env := map[string]string{}
	secret := m.secrets[0]
	for _, e := range c.Env {
		s.checkEnv(t, "statefulset env", e.Name)
		for _, ref := range regexp.MustCompile(`\$\(([A-Z0-9_]+)\)`).FindAllStringSubmatch(e.Value, -1) {
			if _, ok := env[ref[1]]; !ok {
				t.Errorf("env %s uses $(%s), which is not defined before it", e.Name, ref[1])
			}
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			r := e.ValueFrom.SecretKeyRef
			_, inData := secret.StringData[r.Key]
			if m.operatorSecret(r.Name, r.Key) {
				// Written by the CloudNativePG operator, checked below.
			} else if r.Name != secret.Name || (!inData && (r.Optional == nil || !*r.Optional)) {
				t.Errorf("env %s: secret %s key %s is not in secret.yaml and not optional", e.Name, r.Name, r.Key)
			}
		}
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = "<" + e.ValueFrom.FieldRef.FieldPath + ">"
		} else {
			env[e.Name] = e.Value
		}
	}
	for _, name := range []string{"MATCHD_GOSSIP_ADDR", "MATCHD_REMOTE_ADDR", "MATCHD_ADVERTISE_REMOTE_ADDR", "MATCHD_JOIN", "MATCHD_LISTEN", "MATCHD_DATABASE_URL", "MATCHD_ADMIN_TOKEN"} {
		if _, ok := env[name]; !ok {
			t.Errorf("env %s is not set", name)
		}
	}
	if env["POD_IP"] != "<status.podIP>" {
		t.Errorf("POD_IP = %q, want the downward API's status.podIP", env["POD_IP"])
	}
	if host, _ := addrPort(t, "MATCHD_GOSSIP_ADDR", env["MATCHD_GOSSIP_ADDR"]); host != "$(POD_IP)" {
		t.Errorf("MATCHD_GOSSIP_ADDR = %q: peers dial it, so it must be the pod IP", env["MATCHD_GOSSIP_ADDR"])
	}
	// The advertised remote host is the pod's DNS name under the headless
	// Service, so the wildcard certificate of the README covers every
	// member. It must be advertised explicitly: a DNS name in
	// MATCHD_REMOTE_ADDR is advertised as its IP, which no certificate made
	// before the pod names (the compose run showed it).
	remoteHost, remotePort := addrPort(t, "MATCHD_ADVERTISE_REMOTE_ADDR", env["MATCHD_ADVERTISE_REMOTE_ADDR"])
	if want := "$(POD_NAME)." + ss.Spec.ServiceName + ".$(POD_NAMESPACE).svc.cluster.local"; remoteHost != want {
		t.Errorf("MATCHD_ADVERTISE_REMOTE_ADDR host = %q, want %q", remoteHost, want)
	}
	if bindHost, bindPort := addrPort(t, "MATCHD_REMOTE_ADDR", env["MATCHD_REMOTE_ADDR"]); net.ParseIP(bindHost) == nil || bindPort != remotePort {
		t.Errorf("MATCHD_REMOTE_ADDR = %q: bind an IP (0.0.0.0) on the advertised port %d", env["MATCHD_REMOTE_ADDR"], remotePort)
	}
	if env["POD_NAME"] != "<metadata.name>" || env["POD_NAMESPACE"] != "<metadata.namespace>" {
		t.Errorf("POD_NAME and POD_NAMESPACE must come from the downward API")
	}
	// Secure by default: gossip key and TLS files from a mounted Secret.
	if v, ok := env["MATCHD_INSECURE_CLUSTER"]; ok && v != "false" {
		t.Errorf("MATCHD_INSECURE_CLUSTER = %q: the manifests must run a secured cluster", v)
	}
	secretMounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name == vm.Name && v.Secret != nil {
				secretMounts[vm.MountPath] = v.Secret.SecretName
			}
		}
	}
	for _, name := range []string{"MATCHD_GOSSIP_KEY_FILE", "MATCHD_CLUSTER_TLS_CA", "MATCHD_CLUSTER_TLS_CERT", "MATCHD_CLUSTER_TLS_KEY"} {
		if _, ok := secretMounts[filepath.Dir(env[name])]; !ok {
			t.Errorf("%s = %q is not in a mounted Secret volume (%v)", name, env[name], secretMounts)
		}
	}
	if sc := pod.Spec.SecurityContext; sc == nil || sc.FSGroup == nil || sc.RunAsUser == nil || *sc.FSGroup != *sc.RunAsUser {
		t.Errorf("fsGroup must be the container user, or it cannot read the mounted secret files")
	}
	// The README's command makes a certificate valid for a member's name.
	if dir := runClusterSecrets(t, "k8s/README.md"); dir != "" {
		host := strings.NewReplacer("$(POD_NAME)", ss.Name+"-0", "$(POD_NAMESPACE)", "default").Replace(remoteHost)
		checkMemberCert(t, dir, "member", host)
	}
	portOf := func(envName, portName string) {
		_, n := addrPort(t, envName, env[envName])
		if p, ok := ports[portName]; !ok || int(p.ContainerPort) != n {
			t.Errorf("%s = %q, but container port %q is %d", envName, env[envName], portName, p.ContainerPort)
		}
	}
	portOf("MATCHD_LISTEN", "http")
	portOf("MATCHD_TCP_LISTEN", "tcp")
	portOf("MATCHD_GOSSIP_ADDR", "gossip-tcp")
	portOf("MATCHD_GOSSIP_ADDR", "gossip-udp")
	portOf("MATCHD_REMOTE_ADDR", "remote")
	portOf("MATCHD_ADVERTISE_REMOTE_ADDR", "remote")
	if ports["gossip-udp"].Protocol != corev1.ProtocolUDP {
		t.Errorf("gossip-udp protocol = %q: memberlist probes over UDP", ports["gossip-udp"].Protocol)
	}

	// Gossip seeds: the headless Service of the StatefulSet, publishing
	// pods before they are ready.
	gossip := m.service(ss.Spec.ServiceName)
	if gossip == nil {
		t.Fatalf("serviceName %q names no Service", ss.Spec.ServiceName)
	}
	if gossip.Spec.ClusterIP != corev1.ClusterIPNone || !gossip.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s must be headless and publish not-ready addresses (seeds for starting members)", gossip.Name)
	}
	joinHost, joinPort := addrPort(t, "MATCHD_JOIN", env["MATCHD_JOIN"])
	if joinHost != gossip.Name && !strings.HasPrefix(joinHost, gossip.Name+".") {
		t.Errorf("MATCHD_JOIN = %q, want the headless Service %s", env["MATCHD_JOIN"], gossip.Name)
	}
	if joinPort != int(ports["gossip-tcp"].ContainerPort) {
		t.Errorf("MATCHD_JOIN port %d differs from the gossip port %d", joinPort, ports["gossip-tcp"].ContainerPort)
	}

	// Every Service selects the pods and targets named container ports.
	for _, svc := range m.services {
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) || len(svc.Spec.Selector) == 0 {
			t.Errorf("Service %s selector %v does not select the pods", svc.Name, svc.Spec.Selector)
		}
		for _, p := range svc.Spec.Ports {
			cp, ok := ports[p.TargetPort.String()]
			if !ok || cp.Protocol != p.Protocol {
				t.Errorf("Service %s port %s targets %q, which is no %s container port", svc.Name, p.Name, p.TargetPort.String(), p.Protocol)
			}
		}
	}
	if m.service("matchd") == nil {
		t.Errorf("no Service for players (matchd)")
	}

	// Probes: /healthz on the HTTP port (503 while draining).
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe: want an HTTP GET of /healthz", name)
			continue
		}
		if p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe = %s on %s, want /healthz on the http port", name, p.HTTPGet.Path, p.HTTPGet.Port.String())
		}
	}

	// Drain: preStop, then SIGTERM drains within --drain-timeout (+5 s
	// watchdog); the grace period must cover all of it.
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil {
		t.Fatalf("no preStop hook")
	}
	pre := c.Lifecycle.PreStop.Exec.Command
	var preStop time.Duration
	if len(pre) == 2 && pre[0] == "sleep" {
		n, _ := strconv.Atoi(pre[1])
		preStop = time.Duration(n) * time.Second
	} else {
		t.Errorf("preStop = %v, want [sleep N]", pre)
	}
	drain := 20 * time.Second
	if def, ok := s.envs["MATCHD_DRAIN_TIMEOUT"]; ok {
		v := def
		if e, ok := env["MATCHD_DRAIN_TIMEOUT"]; ok {
			v = e
		}
		if drain, err = time.ParseDuration(v); err != nil {
			t.Errorf("MATCHD_DRAIN_TIMEOUT %q: %v", v, err)
		}
	}
	grace := time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	if need := preStop + drain + 5*time.Second; grace < need {
		t.Errorf("terminationGracePeriodSeconds %v < preStop %v + drain %v + 5 s", grace, preStop, drain)
	}

	// Resources and security.
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resource requests must set cpu and memory: %v", c.Resources.Requests)
	}
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("pods must run as a non-root user")
	} else if uid := dockerfileUser(t); fmt.Sprint(*sc.RunAsUser) != uid {
		t.Errorf("runAsUser %d differs from the image's USER %s", *sc.RunAsUser, uid)
	}

	// The budget covers the same pods and lets one go at a time.
	pdb := m.pdbs[0]
	psel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || !psel.Matches(podLabels) {
		t.Errorf("PodDisruptionBudget selector does not match the pods")
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget maxUnavailable = %v, want 1", pdb.Spec.MaxUnavailable)
	}

	// Prometheus scrape annotations point at the metrics endpoint.
	if pod.Annotations["prometheus.io/port"] != fmt.Sprint(ports["http"].ContainerPort) || pod.Annotations["prometheus.io/path"] != "/metrics" {
		t.Errorf("scrape annotations %v do not point at /metrics on the http port", pod.Annotations)
	}
}

// runClusterSecrets runs the first deploy/cluster-secrets.sh command shown in
// doc, writing into a temporary directory instead of the one it names, and
// returns that directory ("" without openssl).
func runClusterSecrets(t *testing.T, doc string) string {
	t.Helper()
	if !haveTool(t, "openssl", "the certificates of "+doc+" are not checked") {
		return ""
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`deploy/cluster-secrets\.sh (\S+)((?: [A-Za-z0-9_.-]+=\S+)+)`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("%s shows no deploy/cluster-secrets.sh command", doc)
	}
	dir := filepath.Join(t.TempDir(), "secrets")
	args := []string{dir}
	for _, a := range strings.Fields(m[2]) {
		args = append(args, strings.ReplaceAll(a, "'", ""))
	}
	if out, err := exec.Command("./cluster-secrets.sh", args...).CombinedOutput(); err != nil {
		t.Fatalf("cluster-secrets.sh %v: %v\n%s", args, err, out)
	}
	return dir
}

// checkMemberCert checks that dir/name.crt is signed by dir/ca.crt for
// server and client use, is valid for host, matches its key, and that
// gossip.key is a valid gossip key.
func checkMemberCert(t *testing.T, dir, name, host string) {
	t.Helper()
	read := func(f string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(read("ca.crt")) {
		t.Fatalf("ca.crt holds no certificate")
	}
	pair, err := tls.X509KeyPair(read(name+".crt"), read(name+".key"))
	if err != nil {
		t.Fatalf("%s.crt/%s.key: %v", name, name, err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("%s.crt for %s (%v): %v", name, host, usage, err)
		}
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(read("gossip.key"))))
	if err != nil || (len(key) != 16 && len(key) != 24 && len(key) != 32) {
		t.Errorf("gossip.key is not a base64 16/24/32-byte key (%d bytes, %v)", len(key), err)
	}
}

// TestPostgresClusterManifest checks the CloudNativePG Cluster beside the
// members: three instances, commits that wait for a standby, the database
// the members use, and the members' URL taken from the Secret the operator
// fills with the read-write Service's address.
func TestPostgresClusterManifest(t *testing.T) {
	m := loadManifests(t)
	if len(m.databases) != 1 {
		t.Fatalf("want one CloudNativePG Cluster, have %d", len(m.databases))
	}
	db := m.databases[0]
	if db.Spec.Instances != 3 {
		t.Errorf("instances = %d, want 3 (a primary and two standbys)", db.Spec.Instances)
	}
	sync := db.Spec.PostgresConfiguration.Synchronous
	if sync == nil || sync.Number < 1 || (sync.Method != cnpgv1.SynchronousReplicaConfigurationMethodAny &&
		sync.Method != cnpgv1.SynchronousReplicaConfigurationMethodFirst) {
		t.Fatalf("spec.postgresql.synchronous = %+v: every commit must wait for at least one standby", sync)
	}
	if sync.Number >= db.Spec.Instances {
		t.Errorf("synchronous number %d leaves no standby to lose among %d instances", sync.Number, db.Spec.Instances)
	}
	if sync.DataDurability != cnpgv1.DataDurabilityLevelRequired {
		t.Errorf("synchronous dataDurability = %q, want %q: with %q a commit the members acknowledge may live on one disk",
			sync.DataDurability, cnpgv1.DataDurabilityLevelRequired, cnpgv1.DataDurabilityLevelPreferred)
	}
	if db.Spec.Bootstrap == nil || db.Spec.Bootstrap.InitDB == nil || db.Spec.Bootstrap.InitDB.Database != "matchgrain" {
		t.Errorf("bootstrap.initdb must create the database matchgrain: %+v", db.Spec.Bootstrap)
	}
	if db.Spec.Affinity.EnablePodAntiAffinity == nil || !*db.Spec.Affinity.EnablePodAntiAffinity ||
		db.Spec.Affinity.PodAntiAffinityType != "required" {
		t.Errorf("instances must be kept on different nodes (required pod anti-affinity): %+v", db.Spec.Affinity)
	}
	// The operator's application Secret holds the URL of the read-write
	// Service (<cluster>-rw), which always reaches the primary.
	var url *corev1.SecretKeySelector
	for _, e := range m.statefulSets[0].Spec.Template.Spec.Containers[0].Env {
		if e.Name == "MATCHD_DATABASE_URL" && e.ValueFrom != nil {
			url = e.ValueFrom.SecretKeyRef
		}
	}
	if url == nil || url.Name != db.GetApplicationSecretName() || url.Key != "uri" {
		t.Errorf("MATCHD_DATABASE_URL = %+v, want the key uri of the Secret %s (the read-write Service %s)",
			url, db.GetApplicationSecretName(), db.GetServiceReadWriteName())
	}
}
