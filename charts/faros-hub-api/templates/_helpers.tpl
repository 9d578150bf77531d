{{/* Chart name. */}}
{{- define "faros-hub-api.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The hub's Service as the umbrella chart tells every chart (`global.faros.hub`); empty outside it. */}}
{{- define "faros-hub-api.global" -}}
{{- dig "faros" "hub" dict (.Values.global | default dict) | toJson }}
{{- end }}

{{/* Full name: fullnameOverride, else the umbrella's `global.faros.hub.fullname`, else <release>-<chart>
unless the release name already contains the chart name. */}}
{{- define "faros-hub-api.fullname" -}}
{{- $g := include "faros-hub-api.global" . | fromJson }}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if $g.fullname }}
{{- $g.fullname | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "faros-hub-api.selectorLabels" -}}
app.kubernetes.io/name: {{ include "faros-hub-api.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "faros-hub-api.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "faros-hub-api.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: hub-api
app.kubernetes.io/part-of: faros
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "faros-hub-api.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "faros-hub-api.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding the serving certificate, its key and CA. */}}
{{- define "faros-hub-api.tlsSecret" -}}
{{- if eq .Values.tls.mode "existingSecret" }}
{{- required "tls.existingSecret is required when tls.mode is existingSecret" (tpl .Values.tls.existingSecret .) }}
{{- else }}
{{- printf "%s-tls" (include "faros-hub-api.fullname" .) }}
{{- end }}
{{- end }}

{{/* DNS names of the Service, for certificates. */}}
{{- define "faros-hub-api.dnsNames" -}}
{{- $fullname := include "faros-hub-api.fullname" . -}}
{{- $names := list $fullname (printf "%s.%s" $fullname .Release.Namespace) (printf "%s.%s.svc" $fullname .Release.Namespace) (printf "%s.%s.svc.cluster.local" $fullname .Release.Namespace) -}}
{{- if .Values.ingress.host }}{{ $names = append $names .Values.ingress.host }}{{ end -}}
{{- range .Values.tlsRoute.hostnames }}{{ $names = append $names . }}{{ end -}}
{{- concat $names .Values.tls.extraDNSNames | uniq | toJson }}
{{- end }}

{{/* The Service port the hub listens on: `service.port`, else the umbrella's `global.faros.hub.port`, else 8443. */}}
{{- define "faros-hub-api.port" -}}
{{- $g := include "faros-hub-api.global" . | fromJson }}
{{- .Values.service.port | default $g.port | default 8443 | int }}
{{- end }}

{{/*
Under the umbrella chart the reconciler and the providers address the hub through `global.faros.hub`
(they cannot see this chart's values). Refuse any setting of this chart that would put the hub
somewhere else than they are told, instead of letting them dial a Service that does not exist.
*/}}
{{- define "faros-hub-api.checkGlobal" -}}
{{- $g := include "faros-hub-api.global" . | fromJson }}
{{- if $g }}
{{- $port := include "faros-hub-api.port" . | int }}
{{- if and $g.port (ne $port (int $g.port)) }}
{{- fail (printf "faros-hub-api.service.port is %d but global.faros.hub.port, which the reconciler and the providers dial, is %v: under the umbrella chart set global.faros.hub.port only" $port $g.port) }}
{{- end }}
{{- $name := include "faros-hub-api.fullname" . }}
{{- $told := $g.fullname | default (ternary .Release.Name (printf "%s-faros-hub-api" .Release.Name) (contains "faros-hub-api" .Release.Name)) | trunc 63 | trimSuffix "-" }}
{{- if ne $name $told }}
{{- fail (printf "faros-hub-api's Service would be %s but the reconciler and the providers are told %s: under the umbrella chart set global.faros.hub.fullname, not faros-hub-api.fullnameOverride or nameOverride" $name $told) }}
{{- end }}
{{- $ca := include "faros-hub-api.tlsSecret" . }}
{{- $toldCA := $g.caSecret | default (printf "%s-tls" $told) }}
{{- if and .Values.tls.includesCA (ne $ca $toldCA) }}
{{- fail (printf "faros-hub-api's certificate Secret is %s but the reconciler and the providers are told to trust the CA in %s: under the umbrella chart set global.faros.hub.caSecret to the Secret holding the hub's CA" $ca $toldCA) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
An image reference from an `image`-shaped dict: `registry` (else `global.imageRegistry`) in place of the
repository's registry and path, as `cargo xtask images --registry` pushes (`<registry>/<last segment>`);
pinned by `digest` when set, else tagged (`tag`, else the chart's appVersion).
Called with (list $ .Values.image).
*/}}
{{- define "faros-hub-api.imageRef" -}}
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
{{- define "faros-hub-api.podPlacement" -}}
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
{{- $_ := set $c "labelSelector" (dict "matchLabels" (include "faros-hub-api.selectorLabels" $ | fromYaml)) }}
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
{{- define "faros-hub-api.disruptionBudget" -}}
{{- if not (kindIs "invalid" .Values.podDisruptionBudget.minAvailable) }}
minAvailable: {{ .Values.podDisruptionBudget.minAvailable }}
{{- else }}
maxUnavailable: {{ .Values.podDisruptionBudget.maxUnavailable }}
{{- end }}
{{- end }}

{{/* Labels of the `helm test` Pod: the chart's, but never its workload's selector. */}}
{{- define "faros-hub-api.testLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ printf "%s-test" (include "faros-hub-api.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: test
app.kubernetes.io/part-of: faros
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Where the `helm test` Pod runs: the workload's priority, security context and node placement. */}}
{{- define "faros-hub-api.testPlacement" -}}
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
