package kubernetes

// The parts of the manifests the checks read; go-yaml ignores the rest.
type (
	meta struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	object struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   meta              `yaml:"metadata"`
		Data       map[string]string `yaml:"data"`
		StringData map[string]string `yaml:"stringData"`
	}
	selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	probe struct {
		HTTPGet *struct {
			Path string `yaml:"path"`
			Port any    `yaml:"port"`
		} `yaml:"httpGet"`
		PeriodSeconds    int `yaml:"periodSeconds"`
		FailureThreshold int `yaml:"failureThreshold"`
	}
	securityContext struct {
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		RunAsUser                *int  `yaml:"runAsUser"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
	}
	container struct {
		Name  string   `yaml:"name"`
		Image string   `yaml:"image"`
		Args  []string `yaml:"args"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		Env []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom *struct {
				SecretKeyRef *struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		Resources struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		ReadinessProbe  *probe          `yaml:"readinessProbe"`
		LivenessProbe   *probe          `yaml:"livenessProbe"`
		SecurityContext securityContext `yaml:"securityContext"`
		VolumeMounts    []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			SubPath   string `yaml:"subPath"`
		} `yaml:"volumeMounts"`
	}
	deployment struct {
		Spec struct {
			Replicas int      `yaml:"replicas"`
			Selector selector `yaml:"selector"`
			Template struct {
				Metadata meta `yaml:"metadata"`
				Spec     struct {
					TerminationGracePeriodSeconds int             `yaml:"terminationGracePeriodSeconds"`
					SecurityContext               securityContext `yaml:"securityContext"`
					Containers                    []container     `yaml:"containers"`
					Volumes                       []struct {
						Name      string `yaml:"name"`
						ConfigMap *struct {
							Name string `yaml:"name"`
						} `yaml:"configMap"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	service struct {
		Spec struct {
			Selector map[string]string `yaml:"selector"`
			Ports    []struct {
				Port       int `yaml:"port"`
				TargetPort any `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	pdb struct {
		Spec struct {
			Selector       selector `yaml:"selector"`
			MinAvailable   any      `yaml:"minAvailable"`
			MaxUnavailable any      `yaml:"maxUnavailable"`
		} `yaml:"spec"`
	}
	hpa struct {
		Spec struct {
			ScaleTargetRef struct {
				Kind string `yaml:"kind"`
				Name string `yaml:"name"`
			} `yaml:"scaleTargetRef"`
			MinReplicas int `yaml:"minReplicas"`
			MaxReplicas int `yaml:"maxReplicas"`
			Metrics     []struct {
				Type     string `yaml:"type"`
				Resource struct {
					Name string `yaml:"name"`
				} `yaml:"resource"`
			} `yaml:"metrics"`
		} `yaml:"spec"`
	}
)
