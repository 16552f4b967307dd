{{/*
Object names are fixed (providers-webhook, providers-controller, providers-config, ...):
the binaries, the kubectl plugin and the docs name them. One release per cluster.
*/}}

{{/* The chart's name. */}}
{{- define "providers.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* name-version, for the helm.sh/chart label. */}}
{{- define "providers.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels of every object. Takes a dict: ctx (the root context) and name (the
app.kubernetes.io/name: providers-webhook, providers-controller, or the chart's name for
what belongs to neither).
*/}}
{{- define "providers.labels" -}}
helm.sh/chart: {{ include "providers.chart" .ctx }}
app.kubernetes.io/name: {{ .name | default (include "providers.name" .ctx) }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: providers
{{- end -}}

{{/* Labels of the webhook's objects. */}}
{{- define "providers.webhook.labels" -}}
{{ include "providers.labels" (dict "ctx" . "name" "providers-webhook") }}
{{- end -}}

{{/* Labels of the controller's objects. */}}
{{- define "providers.controller.labels" -}}
{{ include "providers.labels" (dict "ctx" . "name" "providers-controller") }}
{{- end -}}

{{/*
Selector labels: the same as the kustomize build's (manifests/), so a selector never
changes between the two and the NetworkPolicy, PDB and Services select the same Pods.
*/}}
{{- define "providers.webhook.selectorLabels" -}}
app.kubernetes.io/name: providers-webhook
{{- end -}}

{{- define "providers.controller.selectorLabels" -}}
app.kubernetes.io/name: providers-controller
{{- end -}}

{{/* The image reference: repository@digest, or repository:tag (default appVersion). */}}
{{- define "providers.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}

{{/* The identity of the installer, as the API server names it in admission requests. */}}
{{- define "providers.controller.username" -}}
{{- printf "system:serviceaccount:%s:providers-controller" .Release.Namespace -}}
{{- end -}}

{{/* The webhook Service's DNS name inside the cluster. */}}
{{- define "providers.webhook.serviceHost" -}}
{{- printf "providers-webhook.%s.svc" .Release.Namespace -}}
{{- end -}}

{{/* The name of the ConfigMap holding the callers' CA (key ca.crt), if any. */}}
{{- define "providers.webhook.callersConfigMap" -}}
{{- if .Values.webhook.callers.existingConfigMap -}}
{{- .Values.webhook.callers.existingConfigMap -}}
{{- else if .Values.webhook.callers.caBundle -}}
providers-webhook-callers
{{- end -}}
{{- end -}}

{{/* The Pod and container security context of both Deployments: the restricted standard. */}}
{{- define "providers.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "providers.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/*
Checks of the values that a schema cannot say; each fails the render with what to set.
*/}}
{{- define "providers.validate" -}}
{{- $callers := .Values.webhook.callers -}}
{{- $unauthenticated := .Values.webhook.allowUnauthenticatedCallers -}}
{{- if and $callers.caBundle $callers.existingConfigMap -}}
{{- fail "webhook.callers: set caBundle or existingConfigMap, not both (both name the CA of the API server's webhook client certificate)" -}}
{{- end -}}
{{- if and $unauthenticated (or $callers.caBundle $callers.existingConfigMap) -}}
{{- fail "webhook.allowUnauthenticatedCallers is true and webhook.callers names a CA: choose one. The webhook either checks the API server's client certificate against that CA or answers any caller (docs/security.md, \"Who may call the webhook\")" -}}
{{- end -}}
{{- if not (or $unauthenticated $callers.caBundle $callers.existingConfigMap) -}}
{{- fail "no caller authentication chosen for the webhook. It signs plans, so it answers only the API server, identified by its webhook client certificate (docs/security.md, \"Who may call the webhook\"). Set one of:\n  webhook.callers.caBundle: the PEM of the CA that signed the API server's webhook client certificate (--set-file webhook.callers.caBundle=ca.crt)\n  webhook.callers.existingConfigMap: a ConfigMap in the release namespace holding that CA under the key ca.crt\n  webhook.allowUnauthenticatedCallers=true: only where the API server cannot present a client certificate (most managed clusters); then enable networkPolicy with the API server's addresses" -}}
{{- end -}}
{{- if and (not $unauthenticated) (empty .Values.webhook.allowedClients) -}}
{{- fail "webhook.allowedClients is empty: with a callers' CA the webhook answers only certificates for one of these subjects; list the common name or DNS name of the API server's webhook client certificate" -}}
{{- end -}}
{{- /* kube-* namespaces hold the cluster's own credentials; default is where everything
     else lands, so the installer must not read Secrets there. (A release into default
     stays possible: `helm lint` renders there.) */ -}}
{{- range $what, $namespace := dict "the release namespace" .Release.Namespace "edgeCredentials.namespace" .Values.edgeCredentials.namespace -}}
{{- if or (hasPrefix "kube-" $namespace) (and (eq $namespace "default") (eq $what "edgeCredentials.namespace")) -}}
{{- fail (printf "%s is %s: the platform keeps its sealing key and the edges' kubeconfig Secrets in namespaces of their own, and the installer may read Secrets in edgeCredentials.namespace; use dedicated namespaces (for example helm install -n providers-system --create-namespace, edgeCredentials.namespace=providers-edges)" $what $namespace) -}}
{{- end -}}
{{- end -}}
{{- if eq .Values.edgeCredentials.namespace .Release.Namespace -}}
{{- fail (printf "edgeCredentials.namespace is the release namespace (%s): the edges' kubeconfig Secrets must live apart from the sealing key and the webhook's serving key, since the installer may read Secrets there; install into another namespace or choose another edgeCredentials.namespace" .Release.Namespace) -}}
{{- end -}}
{{- if and .Values.networkPolicy.enabled (empty .Values.networkPolicy.apiServerCIDRs) -}}
{{- fail "networkPolicy.enabled is true but networkPolicy.apiServerCIDRs is empty: list the API server's source addresses (for example the control-plane nodes' subnet), or no one reaches the webhook and every Workspace write that changes spec is refused" -}}
{{- end -}}
{{- end -}}
