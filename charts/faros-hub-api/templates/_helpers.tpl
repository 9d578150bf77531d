{{/* Chart name. */}}
{{- define "faros-hub-api.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: <release>-<chart> unless the release name already contains the chart name. */}}
{{- define "faros-hub-api.fullname" -}}
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
