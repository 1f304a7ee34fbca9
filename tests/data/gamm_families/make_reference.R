# mgcv reference fits for tests/test_families.py (run from the repository root):
#   Rscript tests/data/gamm_families/make_reference.R
# Fits y ~ s(x, k = K) + s(uid, bs = "re") + s(uid, x, bs = "re") by REML, K = min(10, distinct
# values - 1) (mgcv raises it to 3 with a warning), with family binomial (logit), ocat (7
# categories) or gaussian, and writes one JSON per table: the smooth's summary row, the
# variance components, the ocat cut points and predictions at 5 grid points without random
# effects (binomial: probability of 1; ocat: the 7 category probabilities; gaussian: mean).
suppressMessages(library(mgcv))
here <- "tests/data/gamm_families"
num <- function(v) paste0("[", paste(sprintf("%.10g", v), collapse = ", "), "]")
fit_one <- function(name, family) {
  d <- read.csv(file.path(here, paste0(name, ".csv")))
  x_name <- setdiff(names(d), c("uid", "y", "rating"))[1]
  y_name <- if ("y" %in% names(d)) "y" else "rating"
  d$uid <- factor(d$uid)
  d$x <- d[[x_name]]
  d$resp <- d[[y_name]]
  k <- min(10, length(unique(d$x)) - 1)
  fam <- switch(family, binomial = binomial(), ocat = ocat(R = 7), gaussian = gaussian())
  t0 <- proc.time()[["elapsed"]]
  m <- gam(resp ~ s(x, k = k) + s(uid, bs = "re") + s(uid, x, bs = "re"), family = fam,
           data = d, method = "REML")
  secs <- proc.time()[["elapsed"]] - t0
  st <- summary(m)$s.table
  grid <- seq(min(d$x), max(d$x), length.out = 5)
  nd <- data.frame(x = grid, uid = d$uid[1])
  ex <- c("s(uid)", "s(uid,x)")
  link <- as.numeric(predict(m, nd, exclude = ex, type = "link"))
  resp <- predict(m, nd, exclude = ex, type = "response")
  vc <- gam.vcomp(m, conf.lev = 0.95)
  sdv <- if (is.list(vc)) vc$vc[, 1] else vc[, 1]
  out <- c(
    sprintf('"family": "%s"', family), sprintf('"distance": "%s"', x_name),
    sprintf('"response": "%s"', y_name), sprintf('"k": %d', k),
    sprintf('"edf": %.10g', st[1, 1]), sprintf('"ref_df": %.10g', st[1, 2]),
    sprintf('"stat": %.10g', st[1, 3]), sprintf('"p": %.10g', st[1, 4]),
    sprintf('"intercept": %.10g', coef(m)[1]),
    sprintf('"sd_intercept": %.10g', sdv[["s(uid)"]]),
    sprintf('"sd_slope": %.10g', sdv[["s(uid,x)"]]),
    sprintf('"reml": %.10g', m$gcv.ubre), sprintf('"seconds": %.3f', secs),
    sprintf('"grid": %s', num(grid)), sprintf('"link": %s', num(link)))
  if (family == "ocat") {
    out <- c(out, sprintf('"theta": %s', num(m$family$getTheta(TRUE))))
    out <- c(out, sprintf('"probs": [%s]', paste(apply(resp, 1, num), collapse = ", ")))
  } else {
    out <- c(out, sprintf('"response_grid": %s', num(as.numeric(resp))))
  }
  writeLines(paste0("{\n  ", paste(out, collapse = ",\n  "), "\n}"),
             file.path(here, paste0(name, ".mgcv.json")))
  cat(name, "edf", st[1, 1], "p", st[1, 4], "seconds", secs, "\n")
}
for (name in c("binomial_linear", "binomial_none", "binomial_plateau")) fit_one(name, "binomial")
for (name in c("ocat_linear", "ocat_none", "ocat_plateau", "ocat_three_values",
               "ocat_empty_top"))
  fit_one(name, "ocat")
fit_one("two_optima", "gaussian")
cat("R", R.version.string, "mgcv", as.character(packageVersion("mgcv")), "\n")
