{{/* The pod template shared by the Deployment and the StatefulSet. */}}
{{- define "cdn-exporter.podTemplate" -}}
metadata:
  labels:
    {{- include "cdn-exporter.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    # A change of configuration or token rolls the pods.
    checksum/config: {{ include "cdn-exporter.config" . | sha256sum }}
    {{- if .Values.token }}
    checksum/secret: {{ .Values.token | sha256sum }}
    {{- end }}
    {{- if .Values.login.password }}
    checksum/login: {{ .Values.login.password | sha256sum }}
    {{- end }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "cdn-exporter.serviceAccountName" . }}
  automountServiceAccountToken: false
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
  containers:
    - name: cdn-exporter
      image: {{ include "cdn-exporter.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        {{- include "cdn-exporter.args" . | nindent 8 }}
      {{- if or (include "cdn-exporter.sharded" .) .Values.extraEnv }}
      env:
        {{- if include "cdn-exporter.sharded" . }}
        # This pod's shard is its ordinal, from the pod-index label (Kubernetes >= 1.28).
        - name: SHARD
          valueFrom:
            fieldRef:
              fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
        - name: SHARDS
          value: {{ .Values.sharding.replicas | int | quote }}
        {{- end }}
        {{- with .Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
      ports:
        - name: http-metrics
          containerPort: {{ .Values.port }}
          protocol: TCP
      livenessProbe:
        {{- if include "cdn-exporter.webProbeTcp" . }}
        tcpSocket:
          port: http-metrics
        {{- else }}
        httpGet:
          path: /healthz
          port: http-metrics
          scheme: {{ include "cdn-exporter.webScheme" . }}
        {{- end }}
        periodSeconds: {{ .Values.livenessProbe.periodSeconds }}
        timeoutSeconds: {{ .Values.livenessProbe.timeoutSeconds }}
        failureThreshold: {{ .Values.livenessProbe.failureThreshold }}
      readinessProbe:
        {{- if include "cdn-exporter.webProbeTcp" . }}
        tcpSocket:
          port: http-metrics
        {{- else }}
        httpGet:
          path: {{ include "cdn-exporter.readinessPath" . }}
          port: http-metrics
          scheme: {{ include "cdn-exporter.webScheme" . }}
        {{- end }}
        periodSeconds: {{ .Values.readinessProbe.periodSeconds }}
        timeoutSeconds: {{ .Values.readinessProbe.timeoutSeconds }}
        failureThreshold: {{ .Values.readinessProbe.failureThreshold }}
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      volumeMounts:
        - name: config
          mountPath: {{ include "cdn-exporter.configPath" . }}
          subPath: config.yml
          readOnly: true
        {{- if include "cdn-exporter.secretName" . }}
        - name: token
          mountPath: {{ include "cdn-exporter.tokenDir" . }}
          readOnly: true
        {{- end }}
        {{- if and .Values.login.username (include "cdn-exporter.loginSecretName" .) }}
        - name: login
          mountPath: {{ include "cdn-exporter.passwordDir" . }}
          readOnly: true
        {{- end }}
        - name: state
          mountPath: {{ include "cdn-exporter.stateDir" . }}
        - name: tmp
          mountPath: /tmp
        {{- if include "cdn-exporter.webEnabled" . }}
        # Whole directories, not subPath: kubelet refreshes these when the Secrets change (a renewed certificate).
        - name: web-config
          mountPath: {{ include "cdn-exporter.webConfigDir" . }}
          readOnly: true
        {{- end }}
        {{- if .Values.web.tls.enabled }}
        - name: web-tls
          mountPath: {{ include "cdn-exporter.tlsDir" . }}
          readOnly: true
        {{- end }}
        {{- with .Values.extraVolumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    - name: config
      configMap:
        name: {{ include "cdn-exporter.fullname" . }}
    {{- if include "cdn-exporter.secretName" . }}
    - name: token
      secret:
        secretName: {{ include "cdn-exporter.secretName" . }}
        defaultMode: 0440
        items:
          - key: {{ include "cdn-exporter.secretKey" . }}
            path: token
    {{- end }}
    {{- if and .Values.login.username (include "cdn-exporter.loginSecretName" .) }}
    # Mounted as a folder (no subPath), so an updated Secret reaches the running pod.
    - name: login
      secret:
        secretName: {{ include "cdn-exporter.loginSecretName" . }}
        defaultMode: 0440
        items:
          - key: {{ include "cdn-exporter.loginSecretKey" . }}
            path: password
    {{- end }}
    {{- if not (include "cdn-exporter.sharded" .) }}
    - name: state
      {{- if .Values.persistence.enabled }}
      persistentVolumeClaim:
        claimName: {{ default (include "cdn-exporter.fullname" .) .Values.persistence.existingClaim }}
      {{- else }}
      emptyDir:
        sizeLimit: 64Mi
      {{- end }}
    {{- else if not .Values.persistence.enabled }}
    - name: state
      emptyDir:
        sizeLimit: 64Mi
    {{- end }}
    - name: tmp
      emptyDir:
        sizeLimit: 64Mi
    {{- if include "cdn-exporter.webEnabled" . }}
    - name: web-config
      secret:
        secretName: {{ include "cdn-exporter.webSecretName" . }}
        defaultMode: 0440
    {{- end }}
    {{- if .Values.web.tls.enabled }}
    - name: web-tls
      secret:
        secretName: {{ required "web.tls.existingSecret is required when web.tls.enabled" .Values.web.tls.existingSecret }}
        defaultMode: 0440
    {{- end }}
    {{- with .Values.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
