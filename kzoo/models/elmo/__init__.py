"""ELMo: a character-based bidirectional LSTM language model and its uses."""
