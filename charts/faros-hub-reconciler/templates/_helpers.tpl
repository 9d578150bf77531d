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

{{- define "faros-hub-reconciler.hubURL" -}}
{{- default (printf "https://%s-faros-hub-api.%s.svc:8443" .Release.Name .Release.Namespace) .Values.hub.url | trimSuffix "/" }}
{{- end }}

{{- define "faros-hub-reconciler.hubCASecret" -}}
{{- default (printf "%s-faros-hub-api-tls" .Release.Name) (tpl .Values.hub.caSecret .) }}
{{- end }}

{{- define "faros-hub-reconciler.mirrorNamespace" -}}
{{- default .Release.Namespace .Values.mirror.namespace }}
{{- end }}
