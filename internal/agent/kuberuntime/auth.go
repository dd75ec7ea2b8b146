package kuberuntime

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// dockerConfig is the part of a docker config.json (the content of a
// kubernetes.io/dockerconfigjson Secret) that holds credentials.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Username      string `json:"username"`
	Password      string `json:"password"`
	Auth          string `json:"auth"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// pullAuth finds credentials for image among the pod's imagePullSecrets,
// as the kubelet does: each Secret of type kubernetes.io/dockerconfigjson
// (or the older dockercfg) in the pod's namespace is searched for the
// image's registry. It returns nil when none matches; a Secret that is
// missing or unreadable is skipped, as it is by the kubelet.
func pullAuth(pod *corev1.Pod, image string, secrets map[string]*corev1.Secret) *runtimeapi.AuthConfig {
	if len(pod.Spec.ImagePullSecrets) == 0 {
		return nil
	}
	ref, err := name.ParseReference(image)
	if err != nil {
		return nil
	}
	registry := ref.Context().RegistryStr()
	for _, ps := range pod.Spec.ImagePullSecrets {
		s := secrets[pod.Namespace+"/"+ps.Name]
		if s == nil {
			continue
		}
		var auths map[string]dockerAuth
		switch s.Type {
		case corev1.SecretTypeDockerConfigJson:
			var cfg dockerConfig
			if json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg) != nil {
				continue
			}
			auths = cfg.Auths
		case corev1.SecretTypeDockercfg:
			if json.Unmarshal(s.Data[corev1.DockerConfigKey], &auths) != nil {
				continue
			}
		default:
			continue
		}
		for key, a := range auths {
			if registryOf(key) != registry {
				continue
			}
			cfg := &runtimeapi.AuthConfig{
				Username:      a.Username,
				Password:      a.Password,
				Auth:          a.Auth,
				ServerAddress: registry,
				IdentityToken: a.IdentityToken,
				RegistryToken: a.RegistryToken,
			}
			if cfg.Username == "" && a.Auth != "" {
				if raw, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
					cfg.Username, cfg.Password, _ = strings.Cut(string(raw), ":")
				}
			}
			return cfg
		}
	}
	return nil
}

// registryOf reduces a docker config key ("https://index.docker.io/v1/",
// "registry.example:5000", "http://host/path") to the registry host as
// image references name it.
func registryOf(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	switch host {
	case "index.docker.io", "docker.io", "registry-1.docker.io":
		return name.DefaultRegistry
	}
	return host
}
