{{/* Chart name. */}}
{{- define "faros-provider-quickstart.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: <release>-<chart> unless the release name already contains the chart name. */}}
{{- define "faros-provider-quickstart.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "faros-provider-quickstart.selectorLabels" -}}
app.kubernetes.io/name: {{ include "faros-provider-quickstart.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "faros-provider-quickstart.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "faros-provider-quickstart.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: provider
app.kubernetes.io/part-of: faros
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "faros-provider-quickstart.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "faros-provider-quickstart.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The hub API, which this chart's pods dial. Explicit (`hub.url`) for a chart installed on
its own: its release name says nothing about the hub's. Under the umbrella chart, from `global.faros.hub`,
which the faros-hub-api subchart also names its Service and port from (and refuses to contradict).
*/}}
{{- define "faros-provider-quickstart.hubGlobal" -}}
{{- dig "faros" "hub" dict (.Values.global | default dict) | toJson }}
{{- end }}

{{- define "faros-provider-quickstart.hubFullname" -}}
{{- $g := include "faros-provider-quickstart.hubGlobal" . | fromJson }}
{{- $g.fullname | default (ternary .Release.Name (printf "%s-faros-hub-api" .Release.Name) (contains "faros-hub-api" .Release.Name)) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "faros-provider-quickstart.hubURL" -}}
{{- $g := include "faros-provider-quickstart.hubGlobal" . | fromJson }}
{{- if .Values.hub.url }}
{{- tpl .Values.hub.url . | trimSuffix "/" }}
{{- else if $g }}
{{- printf "https://%s.%s.svc:%v" (include "faros-provider-quickstart.hubFullname" .) .Release.Namespace (int ($g.port | default 8443)) }}
{{- else }}
{{- fail "hub.url is required: the hub API's URL, for a release HUB of charts/faros-hub-api in namespace NS its Service https://HUB-faros-hub-api.NS.svc:8443 (its NOTES print it)" }}
{{- end }}
{{- end }}

{{/*
Where the hub's CA comes from: `hub.caSecret` when set, else key `ca.crt` of the kubeconfig Secret, where the
reconciler writes the CA bundle beside the kubeconfig (and its mirror copies both), so that a provider in a
namespace of its own needs nothing of the hub's namespace.
*/}}
{{- define "faros-provider-quickstart.hubCASecret" -}}
{{- if .Values.hub.caSecret }}
{{- tpl .Values.hub.caSecret . }}
{{- else }}
{{- include "faros-provider-quickstart.kubeconfigSecret" . }}
{{- end }}
{{- end }}

{{- define "faros-provider-quickstart.hubCAKey" -}}
{{- ternary .Values.hub.caKey "ca.crt" (not (empty .Values.hub.caSecret)) }}
{{- end }}

{{/*
The namespace of this chart's objects: `namespaceOverride`, else `global.faros.providersNamespace` (the
umbrella chart's providers namespace, where the reconciler mirrors kubeconfigs), else the release's. Templated.
*/}}
{{- define "faros-provider-quickstart.namespace" -}}
{{- $g := dig "faros" "providersNamespace" "" (.Values.global | default dict) }}
{{- tpl (.Values.namespaceOverride | default $g | default .Release.Namespace) . }}
{{- end }}

{{- define "faros-provider-quickstart.url" -}}
{{- default (printf "http://%s.%s.svc:%v" (include "faros-provider-quickstart.fullname" .) (include "faros-provider-quickstart.namespace" .) .Values.service.port) .Values.url | trimSuffix "/" }}
{{- end }}

{{- define "faros-provider-quickstart.kubeconfigSecret" -}}
{{- default (printf "%s-kubeconfig" .Values.providerName) (tpl .Values.kubeconfig.secretName .) }}
{{- end }}

{{/* Environment both containers share: where the kubeconfig and the manifest inputs are. */}}
{{- define "faros-provider-quickstart.env" -}}
- name: FAROS_PROVIDER_KUBECONFIG
  value: /var/run/secrets/faros/faros-provider-kubeconfig
- name: FAROS_PROVIDER_NAME
  value: {{ .Values.providerName | quote }}
- name: FAROS_LOG_FORMAT
  value: {{ .Values.log.format | quote }}
- name: FAROS_LOG_LEVEL
  value: {{ .Values.log.level | quote }}
{{- end }}

{{/*
An image reference from an `image`-shaped dict: `registry` (else `global.imageRegistry`) in place of the
repository's registry and path, as `cargo xtask images --registry` pushes (`<registry>/<last segment>`);
pinned by `digest` when set, else tagged (`tag`, else the chart's appVersion).
Called with (list $ .Values.image).
*/}}
{{- define "faros-provider-quickstart.imageRef" -}}
{{- $root := index . 0 }}
{{- $image := index . 1 }}
{{- $registry := $image.registry | default (dig "imageRegistry" "" ($root.Values.global | default dict)) }}
{{- $repository := $image.repository }}
{{- if $registry }}
{{- $repository = printf "%s/%s" (trimSuffix "/" $registry) (base $repository) }}
{{- end }}
{{- if $image.digest }}
{{- printf "%s@%s" $repository $image.digest }}
{{- else }}
{{- printf "%s:%s" $repository (toString ($image.tag | default $root.Chart.AppVersion)) }}
{{- end }}
{{- end }}

{{/* Pod spec fields every workload of the chart shares: priority, security context, spread, placement. */}}
{{- define "faros-provider-quickstart.podPlacement" -}}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.topologySpreadConstraints }}
{{- /* A constraint without a selector spreads this chart's pods. */}}
topologySpreadConstraints:
{{- range . }}
{{- $c := deepCopy . }}
{{- if not (hasKey $c "labelSelector") }}
{{- $_ := set $c "labelSelector" (dict "matchLabels" (include "faros-provider-quickstart.selectorLabels" $ | fromYaml)) }}
{{- end }}
  - {{- toYaml $c | nindent 4 }}
{{- end }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The PodDisruptionBudget's budget: `minAvailable` when set, else `maxUnavailable`. */}}
{{- define "faros-provider-quickstart.disruptionBudget" -}}
{{- if not (kindIs "invalid" .Values.podDisruptionBudget.minAvailable) }}
minAvailable: {{ .Values.podDisruptionBudget.minAvailable }}
{{- else }}
maxUnavailable: {{ .Values.podDisruptionBudget.maxUnavailable }}
{{- end }}
{{- end }}

{{/* Labels of the `helm test` Pod: the chart's, but never its workload's selector. */}}
{{- define "faros-provider-quickstart.testLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ printf "%s-test" (include "faros-provider-quickstart.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: test
app.kubernetes.io/part-of: faros
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Where the `helm test` Pod runs: the workload's priority, security context and node placement. */}}
{{- define "faros-provider-quickstart.testPlacement" -}}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
