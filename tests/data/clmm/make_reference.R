# ordinal::clmm reference fits for tests/test_calibration.py (run from the repository root,
# after python tests/data/clmm/make_data.py):
#   Rscript tests/data/clmm/make_reference.R
# Each pilot's acceptance and action ratings are fitted one at a time as the cumulative probit
# model with equidistant thresholds and a random participant intercept,
#   P(y <= k) = Phi(theta_1 + (k - 1) spacing - beta_d d - beta_b blocked - u),  u ~ N(0, ST^2),
# d = sparsity - 1 (blocked for action only), by maximum likelihood with adaptive
# Gauss-Hermite quadrature (nAGQ = 50; clmm's adaptive rule takes a single random-effect
# term, as here; it stops with an error from 55 nodes). The fit is repeated with nAGQ = 40 and
# the largest change of any estimate and of the log-likelihood is written beside it. The joint
# fit of both ratings with correlated intercepts has no clmm counterpart (a vector-valued
# random effect and a noise SD per rating); the test checks it at correlation 0, where it is
# the sum of these two fits. One JSON per pilot.
suppressMessages(library(ordinal))
here <- "tests/data/clmm"
num <- function(v) sprintf("%.12g", v)
fit_one <- function(d, rating, agq) {
  d$y <- factor(d[[rating]], levels = 1:7, ordered = TRUE)
  form <- if (rating == "act") y ~ d + blocked + (1 | uid) else y ~ d + (1 | uid)
  clmm(form, data = d, link = "probit", threshold = "equidistant", nAGQ = agq,
       control = clmm.control(method = "nlminb", gradTol = 1e-8))
}
entry <- function(d, rating) {
  m <- fit_one(d, rating, 50)
  m50 <- fit_one(d, rating, 40)
  est <- c(coef(m), ST = m$ST[[1]][1, 1])
  est50 <- c(coef(m50), ST = m50$ST[[1]][1, 1])
  fields <- c(sprintf('"%s": %s', names(est), num(est)),
              sprintf('"log_likelihood": %s', num(as.numeric(logLik(m)))),
              sprintf('"max_gradient": %s', num(max(abs(m$gradient)))),
              sprintf('"nAGQ": %d', 50),
              sprintf('"change_from_nAGQ_40": %s', num(max(abs(est - est50)))),
              sprintf('"log_likelihood_change_from_nAGQ_40": %s',
                      num(abs(as.numeric(logLik(m)) - as.numeric(logLik(m50))))))
  cat(rating, "logLik", as.numeric(logLik(m)), "max change from 40:", max(abs(est - est50)), "\n")
  sprintf('"%s": {%s}', rating, paste(fields, collapse = ", "))
}
for (name in c("recovery_40x6", "wide_30x5", "small_12x4")) {
  d <- read.csv(file.path(here, paste0(name, ".csv")))
  d$uid <- factor(d$uid)
  d$d <- d$sparsity - 1
  cat(name, "\n")
  out <- c(entry(d, "accept"), entry(d, "act"),
           sprintf('"R": "%s"', R.version.string),
           sprintf('"ordinal": "%s"', as.character(packageVersion("ordinal"))))
  writeLines(paste0("{\n  ", paste(out, collapse = ",\n  "), "\n}"),
             file.path(here, paste0(name, ".clmm.json")))
}
