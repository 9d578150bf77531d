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

{{- define "faros-provider-quickstart.hubURL" -}}
{{- default (printf "https://%s-faros-hub-api.%s.svc:8443" .Release.Name .Release.Namespace) .Values.hub.url | trimSuffix "/" }}
{{- end }}

{{- define "faros-provider-quickstart.hubCASecret" -}}
{{- default (printf "%s-faros-hub-api-tls" .Release.Name) (tpl .Values.hub.caSecret .) }}
{{- end }}

{{- define "faros-provider-quickstart.url" -}}
{{- default (printf "http://%s.%s.svc:%v" (include "faros-provider-quickstart.fullname" .) .Release.Namespace .Values.service.port) .Values.url | trimSuffix "/" }}
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
