"""word2vec: skip-gram and CBOW with negative sampling, and `WordVectors`."""
