"""The model: scaled dot-product attention, each network kind's facts (kinds) and its network
(the attention forecaster, the LSTM, the MLP), settings as plain data, the instance norms, the
checkpoint, the weights it attends with, and export."""
