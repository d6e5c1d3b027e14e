{{/* Labels every object carries. */}}
{{- define "gantry.labels" -}}
app.kubernetes.io/part-of: gantry
{{- end }}

{{/* The container image. */}}
{{- define "gantry.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end }}

{{/* Pod-level scheduling constraints and pull secrets shared by both components. */}}
{{- define "gantry.podPlacement" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- toYaml . | nindent 2 }}
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
