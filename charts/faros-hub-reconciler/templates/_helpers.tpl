{{/* Chart name. */}}
{{- define "faros-hub-reconciler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: <release>-<chart> unless the release name already contains the chart name. */}}
{{- define "faros-hub-reconciler.fullname" -}}
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

{{- define "faros-hub-reconciler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "faros-hub-reconciler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "faros-hub-reconciler.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "faros-hub-reconciler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: hub-reconciler
app.kubernetes.io/part-of: faros
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "faros-hub-reconciler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "faros-hub-reconciler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The hub API, which this chart's pods dial. Explicit (`hub.url`, `hub.caSecret`) for a chart installed on
its own: its release name says nothing about the hub's. Under the umbrella chart, from `global.faros.hub`,
which the faros-hub-api subchart also names its Service and port from (and refuses to contradict).
*/}}
{{- define "faros-hub-reconciler.hubGlobal" -}}
{{- dig "faros" "hub" dict (.Values.global | default dict) | toJson }}
{{- end }}

{{- define "faros-hub-reconciler.hubFullname" -}}
{{- $g := include "faros-hub-reconciler.hubGlobal" . | fromJson }}
{{- $g.fullname | default (ternary .Release.Name (printf "%s-faros-hub-api" .Release.Name) (contains "faros-hub-api" .Release.Name)) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "faros-hub-reconciler.hubURL" -}}
{{- $g := include "faros-hub-reconciler.hubGlobal" . | fromJson }}
{{- if .Values.hub.url }}
{{- tpl .Values.hub.url . | trimSuffix "/" }}
{{- else if $g }}
{{- printf "https://%s.%s.svc:%v" (include "faros-hub-reconciler.hubFullname" .) .Release.Namespace (int ($g.port | default 8443)) }}
{{- else }}
{{- fail "hub.url is required: the hub API's URL, for a release HUB of charts/faros-hub-api in namespace NS its Service https://HUB-faros-hub-api.NS.svc:8443 (its NOTES print it)" }}
{{- end }}
{{- end }}

{{- define "faros-hub-reconciler.hubCASecret" -}}
{{- $g := include "faros-hub-reconciler.hubGlobal" . | fromJson }}
{{- if .Values.hub.caSecret }}
{{- tpl .Values.hub.caSecret . }}
{{- else if $g }}
{{- $g.caSecret | default (printf "%s-tls" (include "faros-hub-reconciler.hubFullname" .)) }}
{{- else }}
{{- fail "hub.caSecret is required: the Secret in this namespace with the CA that signs the hub's certificate, for a release HUB of charts/faros-hub-api Secret HUB-faros-hub-api-tls (key ca.crt)" }}
{{- end }}
{{- end }}

{{/*
The mirror's namespace: `mirror.namespace`, else `global.faros.providersNamespace` (templated; the umbrella's),
else `<release namespace>-providers`. Never the release namespace: the mirror's Role reads every Secret of its
namespace, and the release namespace holds the kcp admin kubeconfig (and, in one-namespace installs, the
hub's TLS key and signing key).
*/}}
{{- define "faros-hub-reconciler.mirrorNamespace" -}}
{{- $g := dig "faros" "providersNamespace" "" (.Values.global | default dict) }}
{{- $ns := .Values.mirror.namespace | default (tpl $g .) | default (printf "%s-providers" .Release.Namespace) }}
{{- if eq $ns .Release.Namespace }}
{{- fail (printf "mirror.namespace is the release namespace %s: the mirror may read every Secret of its namespace, so give it one of its own (where the providers run), not the one holding the kcp admin kubeconfig and the hub's Secrets" $ns) }}
{{- end }}
{{- $ns }}
{{- end }}

{{/*
An image reference from an `image`-shaped dict: `registry` (else `global.imageRegistry`) in place of the
repository's registry and path, as `cargo xtask images --registry` pushes (`<registry>/<last segment>`);
pinned by `digest` when set, else tagged (`tag`, else the chart's appVersion).
Called with (list $ .Values.image).
*/}}
{{- define "faros-hub-reconciler.imageRef" -}}
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
{{- define "faros-hub-reconciler.podPlacement" -}}
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
{{- $_ := set $c "labelSelector" (dict "matchLabels" (include "faros-hub-reconciler.selectorLabels" $ | fromYaml)) }}
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
{{- define "faros-hub-reconciler.disruptionBudget" -}}
{{- if not (kindIs "invalid" .Values.podDisruptionBudget.minAvailable) }}
minAvailable: {{ .Values.podDisruptionBudget.minAvailable }}
{{- else }}
maxUnavailable: {{ .Values.podDisruptionBudget.maxUnavailable }}
{{- end }}
{{- end }}

{{/* Labels of the `helm test` Pod: the chart's, but never its workload's selector. */}}
{{- define "faros-hub-reconciler.testLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ printf "%s-test" (include "faros-hub-reconciler.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: test
app.kubernetes.io/part-of: faros
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Where the `helm test` Pod runs: the workload's priority, security context and node placement. */}}
{{- define "faros-hub-reconciler.testPlacement" -}}
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
