{{/* The name of every object the chart makes (cluster-scoped ones too). */}}
{{- define "gpuop.fullname" -}}
{{- default "gpuop-operator" .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Where the operator runs: .Values.namespace, else the release's namespace (helm -n). */}}
{{- define "gpuop.namespace" -}}
{{- default .Release.Namespace .Values.namespace -}}
{{- end -}}

{{- define "gpuop.selectorLabels" -}}
app.kubernetes.io/name: gpuop-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* On every object, so `kubectl get -l app.kubernetes.io/instance=<release>` finds them all. */}}
{{- define "gpuop.labels" -}}
{{ include "gpuop.selectorLabels" . }}
app.kubernetes.io/part-of: gpuop
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}
