{{/* Chart name. */}}
{{- define "faros-kcp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: <release>-<chart> unless the release name already contains the chart name. */}}
{{- define "faros-kcp.fullname" -}}
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

{{- define "faros-kcp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "faros-kcp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "faros-kcp.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "faros-kcp.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: kcp
app.kubernetes.io/part-of: faros
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "faros-kcp.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "faros-kcp.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The URL pods of the hosting cluster reach kcp at: `internalURL`, else the Service's. */}}
{{- define "faros-kcp.internalURL" -}}
{{- if .Values.internalURL }}
{{- .Values.internalURL | trimSuffix "/" }}
{{- else }}
{{- printf "https://%s.%s.svc:%v" (include "faros-kcp.fullname" .) .Release.Namespace .Values.service.port }}
{{- end }}
{{- end }}

{{/* The URL clients reach kcp at (published in what the server writes): `externalURL`, else the internal one. */}}
{{- define "faros-kcp.externalURL" -}}
{{- if .Values.externalURL }}
{{- .Values.externalURL | trimSuffix "/" }}
{{- else }}
{{- include "faros-kcp.internalURL" . }}
{{- end }}
{{- end }}

{{/* The host of `internalURL` (no port, no IPv6 brackets), for the serving certificate. */}}
{{- define "faros-kcp.internalHost" -}}
{{- (urlParse (include "faros-kcp.internalURL" .)).hostname }}
{{- end }}

{{- define "faros-kcp.adminKubeconfigSecret" -}}
{{- default (printf "%s-admin-kubeconfig" (include "faros-kcp.fullname" .)) .Values.adminKubeconfig.secretName }}
{{- end }}

{{- define "faros-kcp.hubKubeconfigSecret" -}}
{{- default (printf "%s-hub-kubeconfig" (include "faros-kcp.fullname" .)) .Values.componentKubeconfigs.hubSecretName }}
{{- end }}

{{- define "faros-kcp.reconcilerKubeconfigSecret" -}}
{{- default (printf "%s-reconciler-kubeconfig" (include "faros-kcp.fullname" .)) .Values.componentKubeconfigs.reconcilerSecretName }}
{{- end }}

{{- define "faros-kcp.hubSigningKeySecret" -}}
{{- default (printf "%s-hub-signing-key" (include "faros-kcp.fullname" .)) .Values.hubSigningKey.secretName }}
{{- end }}

{{/*
An image reference from an `image`-shaped dict: `registry` (else `global.imageRegistry`) in place of the
repository's registry and path, as `cargo xtask images --registry` pushes (`<registry>/<last segment>`);
pinned by `digest` when set, else tagged (`tag`, else the chart's appVersion).
Called with (list $ .Values.image).
*/}}
{{- define "faros-kcp.imageRef" -}}
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
{{- define "faros-kcp.podPlacement" -}}
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
{{- $_ := set $c "labelSelector" (dict "matchLabels" (include "faros-kcp.selectorLabels" $ | fromYaml)) }}
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
{{- define "faros-kcp.disruptionBudget" -}}
{{- if not (kindIs "invalid" .Values.podDisruptionBudget.minAvailable) }}
minAvailable: {{ .Values.podDisruptionBudget.minAvailable }}
{{- else }}
maxUnavailable: {{ .Values.podDisruptionBudget.maxUnavailable }}
{{- end }}
{{- end }}

{{/* Labels of the `helm test` Pod: the chart's, but never its workload's selector. */}}
{{- define "faros-kcp.testLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ printf "%s-test" (include "faros-kcp.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: test
app.kubernetes.io/part-of: faros
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Where the `helm test` Pod runs: the workload's priority, security context and node placement. */}}
{{- define "faros-kcp.testPlacement" -}}
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
