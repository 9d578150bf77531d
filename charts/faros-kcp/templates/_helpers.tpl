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

{{/* The URL clients reach kcp at. */}}
{{- define "faros-kcp.externalURL" -}}
{{- if .Values.externalURL }}
{{- .Values.externalURL | trimSuffix "/" }}
{{- else }}
{{- printf "https://%s.%s.svc:%v" (include "faros-kcp.fullname" .) .Release.Namespace .Values.service.port }}
{{- end }}
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
