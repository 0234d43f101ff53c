# Reads "mlp_ms=X lenet_ms=Y" lines (blank lines ignored) and prints one such line with
# the smallest value of each field.
NF {
  for (i = 1; i <= NF; i++) {
    split($i, kv, "=")
    if (!(kv[1] in best) || kv[2] + 0 < best[kv[1]] + 0) best[kv[1]] = kv[2]
    if (!(kv[1] in seen)) { seen[kv[1]] = 1; order[++n] = kv[1] }
  }
}
END {
  line = ""
  for (i = 1; i <= n; i++) line = line (i > 1 ? " " : "") order[i] "=" best[order[i]]
  print line
}
