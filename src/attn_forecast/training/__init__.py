"""Training: the losses, the batches of an epoch, the one loop (the train stage, the backtest's
folds and pretraining the prior use it), the pretraining corpus, threads and processes,
and DVCLive logging."""
