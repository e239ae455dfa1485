"""The model: scaled dot-product attention, the attention forecaster and the LSTM (settings as
plain data), the instance norms, the checkpoint, the weights it attends with, and export."""
