"""Scientific machine learning, one subpackage per paper: neural force fields and symmetry (`forcefields`, the
equivariance-scaling paper), BrainGFM (`braingfm`), SCISOR (`scisor`), RF-MatID (`rf_matid`), GF-Screen
(`gf_screen`)."""
