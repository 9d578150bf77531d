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
